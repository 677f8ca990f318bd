package framework

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestTokenFileUsesKubeAPIServerCSVFormat(t *testing.T) {
	users, err := completeTokenUsers([]TokenUser{
		{Name: "user-1", Groups: []string{"team-1"}, Token: "t1"},
		{Name: "multi", UID: "u-2", Groups: []string{"g1", "g2"}, Token: "t2"},
		{Name: "nogroups", Token: "t3"},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := writeTokenFile(path, users); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "t1,user-1,user-1,team-1\nt2,multi,u-2,\"g1,g2\"\nt3,nogroups,nogroups\n"
	if string(b) != want {
		t.Errorf("token file:\n%s\nwant:\n%s", b, want)
	}
	// kube-apiserver reads the file with encoding/csv and variable field counts.
	r := csv.NewReader(strings.NewReader(string(b)))
	r.FieldsPerRecord = -1
	if _, err := r.ReadAll(); err != nil {
		t.Errorf("parse token file: %v", err)
	}
}

func TestCompleteTokenUsersGivesDistinctRandomTokens(t *testing.T) {
	users, err := completeTokenUsers(KCPTestTokenUsers())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, u := range users {
		if u.Token == "" || seen[u.Token] {
			t.Errorf("user %q: token %q is empty or repeated", u.Name, u.Token)
		}
		seen[u.Token] = true
	}
	if _, err := completeTokenUsers([]TokenUser{{Name: "x"}, {Name: "x"}}); err == nil {
		t.Error("duplicate user names were accepted")
	}
}

func TestFreePortsAreNeverHandedOutTwice(t *testing.T) {
	seen := map[int]bool{}
	for _, p := range append(FreePorts(t, 3), FreePort(t), FreePort(t)) {
		if seen[p] {
			t.Errorf("port %d was handed out twice", p)
		}
		seen[p] = true
	}
}

func TestLogTailSinceReturnsOnlyNewLines(t *testing.T) {
	s := &Process{Name: "shard", WorkDir: t.TempDir()}
	if err := os.WriteFile(s.LogPath(), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	from := s.LogSize()
	f, err := os.OpenFile(s.LogPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("three\nfour\nfive\n")
	f.Close()

	if got := s.LogTailSince(from, 2); got != "four\nfive" {
		t.Errorf("LogTailSince(from, 2) = %q", got)
	}
	if got := s.LogTailSince(from, 10); got != "three\nfour\nfive" {
		t.Errorf("LogTailSince(from, 10) = %q", got)
	}
	if got := s.LogTail(10); got != "one\ntwo\nthree\nfour\nfive" {
		t.Errorf("LogTail(10) = %q", got)
	}
}

func TestUniqueClusterNameIsAValidName(t *testing.T) {
	a, b := UniqueClusterName("a"), UniqueClusterName("a")
	if a == b {
		t.Errorf("two names are equal: %q", a)
	}
	if err := logicalcluster.ValidateName(a); err != nil {
		t.Error(err)
	}
}

func TestProcessKillEndsTheProcessAndStartRunsItAgain(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep on PATH")
	}
	p := &Process{Name: "sleep", Binary: sleep, Args: func() []string { return []string{"60"} }, WorkDir: t.TempDir()}
	for range 2 {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		if p.PID() == 0 {
			t.Fatal("a running process has no PID")
		}
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		if p.PID() != 0 {
			t.Error("a killed process still has a PID")
		}
	}
}
