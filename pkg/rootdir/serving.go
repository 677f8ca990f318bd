package rootdir

import (
	"net"

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
