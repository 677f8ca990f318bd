package frontproxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// PathMapping routes the requests below a path to a backend (docs/api.md,
// "Front-proxy mapping file"). The mapping of path /clusters/ routes by the
// index to the shard of the request's logical cluster; its backend is not
// used.
type PathMapping struct {
	Path              string `json:"path"`
	Backend           string `json:"backend"`
	BackendServerCA   string `json:"backend_server_ca"`
	ProxyClientCert   string `json:"proxy_client_cert"`
	ProxyClientKey    string `json:"proxy_client_key"`
	UserHeader        string `json:"user_header,omitempty"`
	GroupHeader       string `json:"group_header,omitempty"`
	ExtraHeaderPrefix string `json:"extra_header_prefix,omitempty"`
}

// ClustersPath is the mapping path that turns on routing by the index: the
// prefix of every logical cluster's API.
const ClustersPath = logicalcluster.ClustersPrefix

// route is a loaded mapping: its backend and the transport that presents
// the mapping's client certificate.
type route struct {
	PathMapping
	backend   *url.URL
	transport http.RoundTripper
}

// LoadMappings reads a mapping file and prepares a transport per mapping.
// Routes are returned longest path first.
func LoadMappings(file string) ([]*route, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("mapping file: %w", err)
	}
	var mappings []PathMapping
	if err := yaml.UnmarshalStrict(data, &mappings); err != nil {
		return nil, fmt.Errorf("mapping file %s: %w", file, err)
	}
	routes := make([]*route, 0, len(mappings))
	seen := map[string]bool{}
	for i, m := range mappings {
		r, err := newRoute(m)
		if err != nil {
			return nil, fmt.Errorf("mapping file %s: entry %d (path %q): %w", file, i, m.Path, err)
		}
		if seen[r.Path] {
			return nil, fmt.Errorf("mapping file %s: path %q is mapped twice", file, r.Path)
		}
		seen[r.Path] = true
		routes = append(routes, r)
	}
	sort.SliceStable(routes, func(i, j int) bool { return len(routes[i].Path) > len(routes[j].Path) })
	return routes, nil
}

func newRoute(m PathMapping) (*route, error) {
	if !strings.HasPrefix(m.Path, "/") {
		return nil, fmt.Errorf("path must start with /")
	}
	if m.UserHeader == "" {
		m.UserHeader = "X-Remote-User"
	}
	if m.GroupHeader == "" {
		m.GroupHeader = "X-Remote-Group"
	}
	if m.ExtraHeaderPrefix == "" {
		m.ExtraHeaderPrefix = "X-Remote-Extra-"
	}
	for _, h := range []string{m.UserHeader, m.GroupHeader, m.ExtraHeaderPrefix} {
		if !strings.HasPrefix(strings.ToLower(h), "x-remote-") {
			// Incoming X-Remote-* headers are dropped; headers of another
			// name could be sent by a client and reach the backend.
			return nil, fmt.Errorf("header %q must start with X-Remote-", h)
		}
	}
	r := &route{PathMapping: m}
	if m.Path != ClustersPath {
		u, err := url.Parse(m.Backend)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("backend %q is not an https URL", m.Backend)
		}
		r.backend = u
	}
	if m.ProxyClientCert == "" || m.ProxyClientKey == "" || m.BackendServerCA == "" {
		return nil, fmt.Errorf("backend_server_ca, proxy_client_cert and proxy_client_key are required")
	}
	cert, err := tls.LoadX509KeyPair(m.ProxyClientCert, m.ProxyClientKey)
	if err != nil {
		return nil, fmt.Errorf("proxy client certificate: %w", err)
	}
	caPEM, err := os.ReadFile(m.BackendServerCA)
	if err != nil {
		return nil, fmt.Errorf("backend server CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("backend server CA %s holds no certificate", m.BackendServerCA)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}
	transport.ForceAttemptHTTP2 = true
	transport.MaxIdleConnsPerHost = 100
	r.transport = transport
	return r, nil
}

// matches tells whether the route serves path.
func (r *route) matches(path string) bool {
	if r.Path == "/" {
		return true
	}
	p := strings.TrimSuffix(r.Path, "/")
	return path == p || strings.HasPrefix(path, p+"/")
}
