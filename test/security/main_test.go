// Package security starts the whole system (root shard, shard-1, the
// cache server, a front-proxy) and sends generated requests at it as two
// tenants, each with its own workspace and objects carrying unique marker
// strings: every verb on every served resource, by path and by logical
// cluster name, with path tricks, selectors, foreign continue tokens,
// wildcard URLs, client-set kcp.io/cluster annotations, spoofed
// X-Remote-* headers, impersonation, client certificates and service
// account tokens of the other tenant, through the front-proxy and directly
// at the shards. Every answer is checked for the other tenant's markers;
// refusals must be 4xx, never 5xx. Bad input (oversize and deep bodies,
// invalid YAML, strict field validation, huge selectors, thousands of
// watches) must get a clear 4xx or 429 and leave the processes running.
// Every request encoding (content types, patch types, Accept variants,
// malformed, truncated and empty bodies) on every resource family
// (built-in, CRD, core group CRD, bound, the APIExport view, the cache
// server) must get a 4xx or a 2xx. The package fails on any 5xx and on any
// panic the servers log while it runs.
//
// The lean run goes with `make test`; SHARDPLANE_SECURITY_LONG=1 sends every
// request in both directions, at every shard, with more tricks and
// watches.
package security

import (
	"fmt"
	"os"
	"testing"

	"github.com/shardplane/shardplane/test/framework"
)

// sys is the system every test of the package shares.
var sys *framework.System

// long tells whether the long version runs (SHARDPLANE_SECURITY_LONG=1).
var long = os.Getenv("SHARDPLANE_SECURITY_LONG") != ""

// TestMain runs the tests on one system and fails the package on any 5xx
// answer or any panic the servers logged meanwhile, whichever test caused
// it.
func TestMain(m *testing.M) {
	var marks logMarks
	afterTests := func(s *framework.System) bool {
		panics, reports := panicsSince(s, marks)
		results.mu.Lock()
		results.panics = panics
		results.mu.Unlock()
		for i, r := range reports {
			if i == 20 {
				fmt.Fprintf(os.Stderr, "... and %d more panic lines\n", len(reports)-i)
				break
			}
			fmt.Fprintln(os.Stderr, "PANIC in", r)
		}
		return !results.failed()
	}
	code := framework.RunWithSharedSystem(m, "security", framework.SharedSystemOptions{AfterTests: afterTests}, func(s *framework.System) {
		sys = s
		marks = markLogs(s)
	})
	fmt.Println(results.summary())
	os.Exit(code)
}
