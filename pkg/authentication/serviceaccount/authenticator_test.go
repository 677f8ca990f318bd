package serviceaccount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardplane/shardplane/pkg/rootdir"
)

func TestAuthenticatorThatCannotBeBuiltIsAnError(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "not-a-key.pem")
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string][]string{
		"unreadable": {filepath.Join(dir, "missing.pem")},
		"not a key":  {bad},
	} {
		_, err := NewAuthenticator(Options{Issuers: []string{"https://kcp.default.svc"}, KeyFiles: files, Getter: &TokenGetter{}})
		if err == nil || !strings.Contains(err.Error(), files[0]) {
			t.Errorf("%s: got %v, want an error naming %s", name, err, files[0])
		}
	}

	key, err := rootdir.Dir(dir).EnsureServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthenticator(Options{Issuers: []string{"https://kcp.default.svc"}, KeyFiles: []string{key}, Getter: &TokenGetter{}})
	if err != nil || a == nil {
		t.Fatalf("valid key: %v", err)
	}
}
