// Package home serves the users' home workspaces, as kcp does: a GET of the
// Workspace "~" in root answers the caller's home, a logical cluster
// without a parent Workspace that is created on first access, whose name
// derives from the user name and whose canonical path is user:<name>.
package home

import (
	"crypto/sha256"
	"math/big"
	"regexp"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const (
	// PathPrefix is the first segment of the path of a home workspace:
	// user:<name>.
	PathPrefix = "user"
	// WorkspaceName is the name under which root answers the caller's home
	// Workspace.
	WorkspaceName = "~"
)

// ClusterName returns the logical cluster of a user's home, as kcp names
// it: the first 8 bytes of the SHA-224 of the user name read as a
// big-endian number in lower-case base36, with a "0" in front for every
// leading zero byte. Different user names give different hashes, so no
// two users share a home.
func ClusterName(user string) logicalcluster.Name {
	sum := sha256.Sum224([]byte(user))
	prefix := 8
	zeros := ""
	for _, b := range sum[:prefix] {
		if b != 0 {
			break
		}
		zeros += "0"
	}
	digits := ""
	if n := new(big.Int).SetBytes(sum[:prefix]); n.Sign() > 0 {
		digits = n.Text(36)
	}
	return logicalcluster.Name(zeros + digits)
}

// segment is what a user name must look like to be one segment of a path:
// a DNS label, as every workspace name is.
var segment = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Path returns the canonical path of a user's home: user:<name> when the
// name is one valid path segment, otherwise the home's logical cluster
// name. A name with ':' in it (system:serviceaccount:ns:sa) would read as
// several segments, and so could clash with the path of a workspace nested
// in another user's home (user "alice:team" against alice's "team"); a name
// with other characters (a@b.c, upper case, more than 63 characters) is no
// path at all. Such users reach their home by its cluster name, which is
// what the Workspace "~" tells them.
func Path(user string) logicalcluster.Path {
	if segment.MatchString(user) {
		return logicalcluster.Path(PathPrefix).Join(user)
	}
	return ClusterName(user).Path()
}
