package identities

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// owned are the names no Go file outside this package spells: kcp's
// privileged groups and system: users, and the Kubernetes names upstream
// already has constants for. Plain user names (kcp-admin, front-proxy) are
// left out: they are also process, file and authorizer names.
var owned = []string{
	KCPGroupPrefix, KCPAdminGroup, LogicalClusterAdminGroup, ExternalLogicalClusterAdminGroup,
	InitializerGroupPrefix, TerminatorGroupPrefix, CacheWriterGroup, CacheReaderGroup, CacheWriterUser,
	user.SystemPrivilegedGroup, user.AllAuthenticated, user.AllUnauthenticated, serviceaccount.ServiceAccountUsernamePrefix,
}

// privilegedLiterals returns the lines of src holding a string literal that
// is an owned name, or embeds one in quotes (a token file line, JSON).
// Prose naming a group ("only system:masters may") is not a literal of it.
func privilegedLiterals(src []byte) []string {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	var found []string
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return found
		}
		if tok != token.STRING {
			continue
		}
		v, err := strconv.Unquote(lit)
		if err != nil {
			continue
		}
		for _, name := range owned {
			if v == name || strings.Contains(v, `"`+name+`"`) {
				found = append(found, fmt.Sprintf("%d: %s", fset.Position(pos).Line, lit))
				break
			}
		}
	}
}

func TestPrivilegedLiteralsFindsNamesNotProse(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string
	}{
		{"package p\nvar g = \"system:masters\"\n", []string{"2: \"system:masters\""}},
		{"package p\nvar g = `system:kcp:admin`\n", []string{"2: `system:kcp:admin`"}},
		{"package p\nvar l = \"%s,kcp-admin,kcp-admin,\\\"system:kcp:admin\\\"\"\n", []string{"2: \"%s,kcp-admin,kcp-admin,\\\"system:kcp:admin\\\"\""}},
		{"package p\nvar p = []string{\"system:kcp:initializer:\"}\n", []string{"2: \"system:kcp:initializer:\""}},
		{"package p\n// \"system:masters\"\nvar m = \"only system:masters may\"\n", nil},
		{"package p\nvar r = \"system:kcp:workspace:access\"\n", nil},
	} {
		if got := privilegedLiterals([]byte(tc.src)); !slices.Equal(got, tc.want) {
			t.Errorf("privilegedLiterals(%q) = %q, want %q", tc.src, got, tc.want)
		}
	}
}

// TestNoPrivilegedNameIsSpelledOutsideThisPackage keeps this package the one
// owner of the privileged names: every non-test Go file of the module must
// use the constants (ours, or upstream's for Kubernetes' names).
func TestNoPrivilegedNameIsSpelledOutsideThisPackage(t *testing.T) {
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	root := here
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatalf("no go.mod above %s", here)
		}
		root = parent
	}
	var offenders []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "vendor" || name == "testdata") {
				return filepath.SkipDir
			}
			if path == here {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, f := range privilegedLiterals(src) {
			offenders = append(offenders, rel+":"+f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(offenders) > 0 {
		t.Errorf("privileged names spelled outside pkg/identities; use its constants (or upstream's user.SystemPrivilegedGroup, user.AllAuthenticated, ...):\n%s", strings.Join(offenders, "\n"))
	}
}
