package initializingworkspaces

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/virtual/framework"
)

// contentProxy forwards requests into a workspace as the caller plus a
// lifecycle group, impersonated with the privileged credential.
type contentProxy struct {
	forwarder framework.Forwarder
}

func newContentProxy(cfg *rest.Config) (*contentProxy, error) {
	shard, err := url.Parse(strings.TrimSuffix(cfg.Host, "/"))
	if err != nil {
		return nil, fmt.Errorf("shard URL %q: %w", cfg.Host, err)
	}
	privileged := rest.CopyConfig(cfg)
	privileged.Impersonate = rest.ImpersonationConfig{}
	base, err := rest.TransportFor(privileged)
	if err != nil {
		return nil, fmt.Errorf("transport to the shard %s: %w", cfg.Host, err)
	}
	return &contentProxy{forwarder: framework.Forwarder{Target: shard, Transport: base, Unreachable: "the shard"}}, nil
}

// serve forwards req to path on the shard as u plus group.
func (p *contentProxy) serve(w http.ResponseWriter, req *http.Request, u user.Info, group, path string) {
	groups := append(append([]string(nil), u.GetGroups()...), group)
	p.forwarder.Forward(w, req, &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: groups, Extra: u.GetExtra()}, path)
}
