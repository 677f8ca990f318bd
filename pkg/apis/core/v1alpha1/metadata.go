package v1alpha1

import (
	"encoding/json"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// IsSystemMetadataKey tells whether an annotation or finalizer belongs to
// the system: its prefix is kcp.io or a subdomain of it (kcp.io/path,
// internal.tenancy.kcp.io/type, authorization.kcp.io/required-groups,
// core.kcp.io/logicalcluster-deletion, ...), or shardplane.io or a
// subdomain of it (the system's own: limits.shardplane.io/...).
func IsSystemMetadataKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return prefix == "kcp.io" || strings.HasSuffix(prefix, ".kcp.io") || prefix == "shardplane.io" || strings.HasSuffix(prefix, ".shardplane.io")
}

// OwnerAnnotation encodes the creator of a workspace as kcp does in
// ExperimentalWorkspaceOwnerAnnotationKey: its name, UID and groups, not
// its extras. Workspace admission and home workspaces both record owners,
// so the encoding lives beside the key.
func OwnerAnnotation(name, uid string, groups []string) (string, error) {
	b, err := json.Marshal(authenticationv1.UserInfo{Username: name, UID: uid, Groups: groups})
	return string(b), err
}
