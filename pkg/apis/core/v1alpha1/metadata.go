package v1alpha1

import "strings"

// IsSystemMetadataKey tells whether an annotation or finalizer belongs to
// the system: its prefix is kcp.io or a subdomain of it (kcp.io/path,
// internal.tenancy.kcp.io/type, authorization.kcp.io/required-groups,
// core.kcp.io/logicalcluster-deletion, ...).
func IsSystemMetadataKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return prefix == "kcp.io" || strings.HasSuffix(prefix, ".kcp.io")
}
