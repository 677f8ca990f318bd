package framework

import (
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
)

// TokenUser is a user of the shard's static token file
// (--token-auth-file, kube-apiserver CSV format).
type TokenUser struct {
	Name   string
	UID    string   // defaults to Name
	Groups []string // may be empty
	Token  string   // random when empty
}

// KCPTestTokenUsers returns the token users kcp's test harness expects:
// user-1 … user-5 in groups team-1 … team-5, and admin in system:masters.
func KCPTestTokenUsers() []TokenUser {
	users := make([]TokenUser, 0, 6)
	for i := 1; i <= 5; i++ {
		users = append(users, TokenUser{
			Name:   fmt.Sprintf("user-%d", i),
			Groups: []string{fmt.Sprintf("team-%d", i)},
		})
	}
	return append(users, TokenUser{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}})
}

// completeTokenUsers fills in the UID and a random token where they are empty.
func completeTokenUsers(users []TokenUser) ([]TokenUser, error) {
	out := make([]TokenUser, len(users))
	seen := map[string]bool{}
	for i, u := range users {
		if u.Name == "" {
			return nil, fmt.Errorf("token user %d has no name", i)
		}
		if seen[u.Name] {
			return nil, fmt.Errorf("token user %q is listed twice", u.Name)
		}
		seen[u.Name] = true
		if u.UID == "" {
			u.UID = u.Name
		}
		if u.Token == "" {
			b := make([]byte, 16)
			if _, err := rand.Read(b); err != nil {
				return nil, fmt.Errorf("token for %q: %w", u.Name, err)
			}
			u.Token = hex.EncodeToString(b)
		}
		u.Groups = append([]string(nil), u.Groups...)
		out[i] = u
	}
	return out, nil
}

// writeTokenFile writes users as token,user,uid,"group1,group2" lines.
func writeTokenFile(path string, users []TokenUser) error {
	var b strings.Builder
	w := csv.NewWriter(&b)
	for _, u := range users {
		record := []string{u.Token, u.Name, u.UID}
		if len(u.Groups) > 0 {
			record = append(record, strings.Join(u.Groups, ","))
		}
		if err := w.Write(record); err != nil {
			return fmt.Errorf("encode token user %q: %w", u.Name, err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("encode token file: %w", err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}
