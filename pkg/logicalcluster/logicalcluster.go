// Package logicalcluster is the one place that knows how a logical cluster is
// spelled: names, paths, the request-context key and the annotations that
// carry a cluster on objects.
package logicalcluster

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

const (
	// AnnotationKey is the annotation that records the logical cluster of an
	// object. The storage layer sets it on every write.
	AnnotationKey = "kcp.io/cluster"
	// PathAnnotationKey is the canonical path of a logical cluster, set on its
	// LogicalCluster object.
	PathAnnotationKey = "kcp.io/path"

	// separator joins the segments of a path.
	separator = ":"
	// systemPrefix starts the names of shard-local system clusters.
	systemPrefix = "system:"
)

// Name is the name of a logical cluster: a base36 ID, "root", or
// "system:<x>". It is what storage keys and the kcp.io/cluster annotation hold.
type Name string

const (
	// Root is the root logical cluster.
	Root Name = "root"
	// SystemAdmin is the shard-local cluster that requests without a
	// /clusters/ prefix are served from.
	SystemAdmin Name = "system:admin"
	// Wildcard addresses all logical clusters of a shard (list and watch only).
	Wildcard Name = "*"
)

// String returns the name as a string.
func (n Name) String() string { return string(n) }

// IsWildcard tells whether n addresses all logical clusters.
func (n Name) IsWildcard() bool { return n == Wildcard }

// IsSystem tells whether n is a shard-local system cluster.
func (n Name) IsSystem() bool { return strings.HasPrefix(string(n), systemPrefix) }

// Path returns the single-segment path of n.
func (n Name) Path() Path { return Path(n) }

// segment is one element of a path: a logical cluster name or a workspace
// name. Workspace names are DNS-1123 labels; logical cluster IDs are base36.
var segment = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidateName returns an error that a user can act on when s is not a valid
// logical cluster name. The wildcard is not a name.
func ValidateName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("logical cluster name must not be empty")
	case strings.HasPrefix(s, systemPrefix):
		rest := strings.TrimPrefix(s, systemPrefix)
		if !segment.MatchString(rest) {
			return fmt.Errorf("invalid logical cluster name %q: after %q it must be lower-case alphanumerics or '-', starting and ending alphanumeric, at most 63 characters", s, systemPrefix)
		}
		return nil
	case !segment.MatchString(s):
		return fmt.Errorf("invalid logical cluster name %q: must be lower-case alphanumerics or '-', starting and ending alphanumeric, at most 63 characters", s)
	}
	return nil
}

// Path is a workspace path: segments joined by ':' ("root:org:team"). The
// first segment is a logical cluster name; every later one a Workspace name
// inside the previous one.
type Path string

// String returns the path as a string.
func (p Path) String() string { return string(p) }

// ParsePath validates s as a path. A single-segment path may also be a system
// cluster name ("system:admin"), which is then one name, not two segments.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return "", fmt.Errorf("workspace path must not be empty")
	}
	if strings.HasPrefix(s, systemPrefix) {
		if err := ValidateName(s); err != nil {
			return "", err
		}
		return Path(s), nil
	}
	for _, seg := range strings.Split(s, separator) {
		if seg == "" {
			return "", fmt.Errorf("invalid workspace path %q: empty segment", s)
		}
		if !segment.MatchString(seg) {
			return "", fmt.Errorf("invalid workspace path %q: segment %q must be lower-case alphanumerics or '-', starting and ending alphanumeric, at most 63 characters", s, seg)
		}
	}
	return Path(s), nil
}

// Segments returns the elements of the path.
func (p Path) Segments() []string {
	if p.IsSystem() {
		return []string{string(p)}
	}
	return strings.Split(string(p), separator)
}

// IsSystem tells whether p names a system cluster.
func (p Path) IsSystem() bool { return strings.HasPrefix(string(p), systemPrefix) }

// Name returns the logical cluster name of a single-segment path.
func (p Path) Name() (Name, bool) {
	if p.IsSystem() || !strings.Contains(string(p), separator) {
		return Name(p), true
	}
	return "", false
}

// Parent returns the path without its last segment, and false for a
// single-segment path.
func (p Path) Parent() (Path, bool) {
	if p.IsSystem() {
		return "", false
	}
	i := strings.LastIndex(string(p), separator)
	if i < 0 {
		return "", false
	}
	return p[:i], true
}

// Base returns the last segment of the path.
func (p Path) Base() string {
	if p.IsSystem() {
		return string(p)
	}
	return string(p)[strings.LastIndex(string(p), separator)+1:]
}

// Join returns p with name appended as a new segment; the empty path
// joined with name is name, as in kcp.
func (p Path) Join(name string) Path {
	if p == "" {
		return Path(name)
	}
	return Path(string(p) + separator + name)
}

type contextKey struct{}

// WithCluster returns a copy of ctx that carries the logical cluster name.
func WithCluster(ctx context.Context, name Name) context.Context {
	return context.WithValue(ctx, contextKey{}, name)
}

// ClusterFromContext returns the logical cluster a request addresses, and
// false when the context carries none.
func ClusterFromContext(ctx context.Context) (Name, bool) {
	n, ok := ctx.Value(contextKey{}).(Name)
	return n, ok && n != ""
}

// ObjectCluster returns the logical cluster recorded in an object's
// annotations, and false when it has none.
func ObjectCluster(annotations map[string]string) (Name, bool) {
	n, ok := annotations[AnnotationKey]
	return Name(n), ok && n != ""
}
