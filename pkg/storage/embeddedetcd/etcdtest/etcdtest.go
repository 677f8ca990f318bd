// Package etcdtest starts an embedded etcd for a test.
package etcdtest

import (
	"net"
	"testing"

	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd"
)

// Start starts an embedded etcd on free loopback ports with its data in a
// temporary directory; it stops when the test ends.
func Start(t testing.TB) *embeddedetcd.Server {
	t.Helper()
	ports := FreePorts(t, 2)
	server, err := embeddedetcd.Start(t.Context(), embeddedetcd.Options{Directory: t.TempDir(), ClientPort: ports[0], PeerPort: ports[1]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	return server
}

// FreePorts returns n loopback ports that were free a moment ago.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// Held until all are picked, so that they differ.
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
