package logicalcluster

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ClustersPrefix starts the URL path of every logical cluster's API:
// /clusters/<name, path or *>/...
const ClustersPrefix = "/clusters/"

// RequestPath returns /clusters/<cluster>: the URL path under which the API
// of a logical cluster (by name, path or the wildcard) is served.
func RequestPath(cluster string) string { return ClustersPrefix + cluster }

// URL returns base (a server URL, with or without a trailing slash)
// followed by /clusters/<cluster>.
func URL(base, cluster string) string { return strings.TrimSuffix(base, "/") + RequestPath(cluster) }

// RequestPath returns /clusters/<p>.
func (p Path) RequestPath() string { return RequestPath(string(p)) }

// RequestPath returns /clusters/<n>.
func (n Name) RequestPath() string { return RequestPath(string(n)) }

// URL returns base followed by /clusters/<p>.
func (p Path) URL(base string) string { return URL(base, string(p)) }

// SplitRequestPath splits /clusters/<cluster>/<rest> without validating
// the cluster segment. rest starts with "/" ("/" when nothing follows the
// segment). ok is false when p does not start with ClustersPrefix or the
// segment is empty.
func SplitRequestPath(p string) (cluster, rest string, ok bool) {
	after, found := strings.CutPrefix(p, ClustersPrefix)
	if !found {
		return "", p, false
	}
	cluster, rest = after, "/"
	if i := strings.IndexByte(after, '/'); i >= 0 {
		cluster, rest = after[:i], after[i:]
	}
	return cluster, rest, cluster != ""
}

// CutRequestPath finds the first /clusters/ in p, which may sit below
// another prefix (/services/<view>/.../clusters/<cluster>/...), and splits
// p around it as SplitRequestPath does. found is false when p contains no
// /clusters/; cluster may then still be empty.
func CutRequestPath(p string) (before, cluster, rest string, found bool) {
	i := strings.Index(p, ClustersPrefix)
	if i < 0 {
		return p, "", "", false
	}
	cluster, rest, _ = SplitRequestPath(p[i:])
	return p[:i], cluster, rest, true
}

// ParseRequestPath validates a request path that starts with /clusters/
// and returns its cluster segment (a name, a path or the wildcard) and the
// rest. rawPath is the request's escaped path, if any: an encoded
// character in the prefix or the segment is refused, since the raw path
// would then name another cluster than the path. Errors are API errors a
// server answers with (400, or 404 for a nested /clusters/).
func ParseRequestPath(path, rawPath string) (Path, string, error) {
	name, rest, _ := SplitRequestPath(path)
	if rawPath != "" {
		// The prefix and the name are stripped from the raw path as they
		// are spelled in the path: an encoded character in either would
		// leave the raw path and the request URI naming another path.
		rawAfter, ok := strings.CutPrefix(rawPath, ClustersPrefix)
		if !ok {
			return "", "", apierrors.NewBadRequest(fmt.Sprintf("path %q must spell %s without encoded characters", rawPath, ClustersPrefix))
		}
		if i := strings.IndexByte(rawAfter, '/'); i >= 0 {
			rawAfter = rawAfter[:i]
		}
		if strings.Contains(rawAfter, "%") {
			return "", "", apierrors.NewBadRequest(fmt.Sprintf("logical cluster name %q must not contain encoded characters", rawAfter))
		}
	}
	if name == "" {
		return "", "", apierrors.NewBadRequest("logical cluster name must not be empty in /clusters/<name>/")
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == ".." || seg == "." {
			return "", "", apierrors.NewBadRequest(fmt.Sprintf("path %q must not contain %q segments", path, seg))
		}
	}
	// kcp serves nothing below a second /clusters/ segment: 404, like any
	// other path the server does not know.
	if rest == "/clusters" || strings.HasPrefix(rest, ClustersPrefix) {
		return "", "", apierrors.NewNotFound(schema.GroupResource{}, path)
	}
	p, err := ParsePathOrWildcard(name)
	if err != nil {
		return "", "", apierrors.NewBadRequest(err.Error())
	}
	return p, rest, nil
}

// ParsePathOrWildcard validates s as a path (ParsePath) or the wildcard.
func ParsePathOrWildcard(s string) (Path, error) {
	if s == string(Wildcard) {
		return Wildcard.Path(), nil
	}
	return ParsePath(s)
}

// ParseNameOrWildcard validates s as a logical cluster name (ValidateName)
// or the wildcard.
func ParseNameOrWildcard(s string) (Name, error) {
	if s == string(Wildcard) {
		return Wildcard, nil
	}
	if err := ValidateName(s); err != nil {
		return "", err
	}
	return Name(s), nil
}

// WildcardAllows tells whether verb may be asked of all logical clusters
// at once: only list and watch, as in kcp.
func WildcardAllows(verb string) bool { return verb == "list" || verb == "watch" }
