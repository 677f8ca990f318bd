package workspace

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// ServerURL is a kubeconfig server URL split at its /clusters/ segment: the
// base that all workspaces share, and the path of the workspace it points at.
type ServerURL struct {
	// Base is the server URL without /clusters/<path> and without a
	// trailing slash.
	Base string
	// Path is the workspace path after /clusters/, empty when the URL does
	// not point at a workspace.
	Path logicalcluster.Path
}

// ParseServerURL splits a kubeconfig server URL into its base and the
// workspace path after /clusters/. A URL without /clusters/ is all base.
func ParseServerURL(server string) (ServerURL, error) {
	u, err := url.Parse(server)
	if err != nil {
		return ServerURL{}, fmt.Errorf("parse server URL %q: %w", server, err)
	}
	if u.Scheme == "" || u.Host == "" {
		return ServerURL{}, fmt.Errorf("server URL %q is not an absolute URL", server)
	}
	before, segment, _, found := logicalcluster.CutRequestPath(u.Path)
	if !found {
		u.Path = strings.TrimSuffix(u.Path, "/")
		return ServerURL{Base: u.String()}, nil
	}
	p, err := logicalcluster.ParsePath(segment)
	if err != nil {
		return ServerURL{}, fmt.Errorf("server URL %q: %w", server, err)
	}
	u.Path = before
	u.RawPath = ""
	return ServerURL{Base: u.String(), Path: p}, nil
}

// URL returns the server URL of path p on the same base.
func (s ServerURL) URL(p logicalcluster.Path) string { return p.URL(s.Base) }

// IsWorkspace tells whether the URL points at a workspace.
func (s ServerURL) IsWorkspace() bool { return s.Path != "" }

// Target is what a `kubectl ws` argument asks for, before it is resolved
// against the current workspace.
type Target int

const (
	// TargetPath is a workspace path, relative or absolute (leading ':').
	TargetPath Target = iota
	// TargetCurrent is "." alone: print the current workspace.
	TargetCurrent
	// TargetPrevious is "-": swap with the previous workspace.
	TargetPrevious
	// TargetRoot is ":" alone: the first segment of the current path.
	TargetRoot
	// TargetHome is "~" or "~:<relative>": the caller's home workspace.
	TargetHome
)

// Classify normalizes a `kubectl ws` argument as kcp's plugin does and tells
// what it asks for. homeDir is the user's home directory: a shell expands an
// unquoted ~ into it before the plugin sees the argument, so a leading
// homeDir is read back as ~. Slashes are accepted for colons. An argument
// that starts with "root" is read as absolute, with a note (legacy syntax).
func Classify(arg, homeDir string) (normalized string, target Target, note string) {
	if homeDir != "" && (arg == homeDir || strings.HasPrefix(arg, homeDir+"/")) {
		arg = "~" + strings.TrimPrefix(arg, homeDir)
	}
	arg = strings.ReplaceAll(arg, "/", ":")
	root := logicalcluster.Root.String()
	if arg == root || strings.HasPrefix(arg, root+":") {
		arg = ":" + arg
		note = "Note: Using 'root:' to define an absolute path is no longer supported. Instead, use ':root' to specify an absolute path."
	}
	switch {
	case arg == "" || arg == "~" || strings.HasPrefix(arg, "~:"):
		if arg == "" {
			arg = "~"
		}
		return arg, TargetHome, note
	case arg == ".":
		return arg, TargetCurrent, note
	case arg == "-":
		return arg, TargetPrevious, note
	case arg == ":":
		return arg, TargetRoot, note
	}
	return arg, TargetPath, note
}

// errUpFromTop is returned for a ".." that would leave the first segment.
var errUpFromTop = errors.New("cannot go up from the top-level workspace")

// Resolve turns a workspace argument into an absolute path: arg starts with
// ':' (absolute) or is relative to current; "." and ".." segments are
// resolved. current may be empty for absolute arguments.
func Resolve(current logicalcluster.Path, arg string) (logicalcluster.Path, error) {
	var joined string
	switch {
	case strings.HasPrefix(arg, ":"):
		joined = strings.TrimPrefix(arg, ":")
	case current == "":
		return "", fmt.Errorf("the current server URL does not point to a workspace; use an absolute path such as :root:%s", arg)
	default:
		joined = current.String() + ":" + arg
	}
	var segments []string
	for _, s := range strings.Split(joined, ":") {
		switch s {
		case ".":
		case "..":
			if len(segments) <= 1 {
				return "", fmt.Errorf("%w: %q", errUpFromTop, arg)
			}
			segments = segments[:len(segments)-1]
		default:
			segments = append(segments, s)
		}
	}
	p, err := logicalcluster.ParsePath(strings.Join(segments, ":"))
	if err != nil {
		return "", fmt.Errorf("invalid workspace path %q: %w", arg, err)
	}
	return p, nil
}

// TopLevel returns the first segment of p (root, or a rootless cluster).
func TopLevel(p logicalcluster.Path) logicalcluster.Path {
	return logicalcluster.Path(p.Segments()[0])
}
