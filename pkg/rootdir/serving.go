package rootdir

import (
	"net"
	"net/url"

	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// SecureServing returns serving options on 127.0.0.1:port whose
// certificate, unless --tls-cert-file names one, is the one
// EnsureServingCert generates in the root directory.
func SecureServing(port int) *genericoptions.SecureServingOptionsWithLoopback {
	o := genericoptions.NewSecureServingOptions().WithLoopback()
	o.BindAddress = net.ParseIP("127.0.0.1")
	o.BindPort = port
	o.ServerCert.CertDirectory = ""
	o.ServerCert.PairName = ServingCertPairName
	return o
}

// ServingNames are the names a generated serving certificate is for.
type ServingNames struct {
	// Host is the certificate's first name, the one clients are given.
	Host string
	// IPs and DNSNames are every name, Host included.
	IPs      []net.IP
	DNSNames []string
}

// ServingHosts returns the names of a server reached at baseURL and bound
// to addresses: the host of baseURL (localhost when it names none),
// localhost, 127.0.0.1 and every address that is not unspecified. Every
// binary's generated serving certificate is for these names, so that the
// same URLs work against any of them.
func ServingHosts(baseURL string, addresses ...net.IP) ServingNames {
	n := ServingNames{Host: "localhost"}
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		n.Host = u.Hostname()
	}
	n.add(n.Host)
	n.add("localhost")
	n.add("127.0.0.1")
	for _, ip := range addresses {
		if ip != nil && !ip.IsUnspecified() {
			n.add(ip.String())
		}
	}
	return n
}

// add adds a host name or IP unless it is there.
func (n *ServingNames) add(host string) {
	if ip := net.ParseIP(host); ip != nil {
		for _, have := range n.IPs {
			if have.Equal(ip) {
				return
			}
		}
		n.IPs = append(n.IPs, ip)
		return
	}
	for _, have := range n.DNSNames {
		if have == host {
			return
		}
	}
	n.DNSNames = append(n.DNSNames, host)
}

// alternates are the names besides Host, as certutil wants them.
func (n ServingNames) alternates() ([]net.IP, []string) {
	host := net.ParseIP(n.Host)
	var ips []net.IP
	for _, ip := range n.IPs {
		if !ip.Equal(host) {
			ips = append(ips, ip)
		}
	}
	var dns []string
	for _, d := range n.DNSNames {
		if d != n.Host {
			dns = append(dns, d)
		}
	}
	return ips, dns
}
