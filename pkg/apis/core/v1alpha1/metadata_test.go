package v1alpha1

import "testing"

func TestIsSystemMetadataKeyMatchesKCPDomainsOnly(t *testing.T) {
	for key, want := range map[string]bool{
		"kcp.io/path":                          true,
		"kcp.io/has-terminators":               true,
		"internal.tenancy.kcp.io/type":         true,
		"authorization.kcp.io/required-groups": true,
		"core.kcp.io/logicalcluster-deletion":  true,
		"experimental.tenancy.kcp.io/owner":    true,
		"example.com/team":                     false,
		"notkcp.io/x":                          false,
		"kcp.io.example.com/x":                 false,
		"team":                                 false,
		"kubernetes":                           false,
	} {
		if got := IsSystemMetadataKey(key); got != want {
			t.Errorf("IsSystemMetadataKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestOwnerAnnotationEncodesNameUIDAndGroupsAsKCP(t *testing.T) {
	got, err := OwnerAnnotation("alice", "u-1", []string{"team", "system:authenticated"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"username":"alice","uid":"u-1","groups":["team","system:authenticated"]}`; got != want {
		t.Errorf("OwnerAnnotation = %s, want %s", got, want)
	}
}
