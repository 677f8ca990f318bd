package framework

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

// handedOut are the ports this process has handed out: a port is closed
// again before its process binds it, so the kernel may offer it to the
// next caller, and two servers of one test would then collide.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePort returns a loopback port that was free a moment ago and that
// this process has not handed out before; the test fails if there is none.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePorts(t, 1)[0]
}

// FreePorts returns n distinct ports as FreePort does.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := FindFreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// FindFreePorts is FreePorts outside a test (TestMain, the benchmark).
func FindFreePorts(n int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		// Held open until all are picked, so the kernel offers another.
		defer l.Close()
		port := l.Addr().(*net.TCPAddr).Port
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			ports = append(ports, port)
		}
	}
	return ports, nil
}
