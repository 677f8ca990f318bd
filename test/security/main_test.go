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
//
// The lean run goes with `make test`; KPLANE_SECURITY_LONG=1 sends every
// request in both directions, at every shard, with more tricks and
// watches.
package security

import (
	"fmt"
	"os"
	"testing"

	"github.com/kplane-dev/kplane/test/e2e/framework"
)

// sys is the system every test of the package shares.
var sys *framework.System

// long tells whether the long version runs (KPLANE_SECURITY_LONG=1).
var long = os.Getenv("KPLANE_SECURITY_LONG") != ""

func TestMain(m *testing.M) {
	code := framework.RunWithSharedSystem(m, "security", framework.SharedSystemOptions{}, func(s *framework.System) { sys = s })
	fmt.Println(results.summary())
	os.Exit(code)
}
