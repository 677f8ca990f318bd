package framework

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// SharedServingCert writes a self-signed serving certificate for 127.0.0.1
// and localhost into a temporary directory and returns the paths of
// certificate and key. Shards started with it (--tls-cert-file,
// --tls-private-key-file) are all trusted through the one certificate, as
// the shards of a system share a CA.
func SharedServingCert(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	cert, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		t.Fatalf("generate serving certificate: %v", err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	if err := os.WriteFile(certFile, cert, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// RandomToken returns a fresh bearer token.
func RandomToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// WriteTokenKubeconfig writes a kubeconfig whose one context talks to server
// with a bearer token, trusting the certificate in caFile, and returns its
// path (in a temporary directory).
func WriteTokenKubeconfig(t testing.TB, name, server, caFile, token string) string {
	t.Helper()
	requireLoopback(t, server)
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return path
}
