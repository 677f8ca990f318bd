package shard

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	certutil "k8s.io/client-go/util/cert"
)

// The serving certificate file the API server generates holds the serving
// certificate and then its CA; only the CA is published, and it verifies
// the serving certificate.
func TestRootCAIsTheServingCertificatesCA(t *testing.T) {
	serving, _, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := certutil.ParseCertsPEM(serving)
	if err != nil || len(chain) != 2 {
		t.Fatalf("generated chain: %d certificates, %v", len(chain), err)
	}
	servingFile := func() ([]byte, error) { return serving, nil }
	ca, err := rootCA("", servingFile)
	if err != nil {
		t.Fatal(err)
	}
	published, err := certutil.ParseCertsPEM(ca)
	if err != nil {
		t.Fatal(err)
	}
	if len(published) != 1 || !published[0].IsCA {
		t.Fatalf("published %d certificates (first is a CA: %v), want the CA alone", len(published), published[0].IsCA)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("the published CA does not verify the serving certificate: %v", err)
	}

	// A serving certificate without its chain is published as it is.
	leaf, err := caCertificates(serving[:strings.Index(string(serving), "-----END CERTIFICATE-----")+len("-----END CERTIFICATE-----\n")])
	if err != nil {
		t.Fatal(err)
	}
	if certs, _ := certutil.ParseCertsPEM(leaf); len(certs) != 1 || certs[0].IsCA {
		t.Errorf("a lone serving certificate became %d certificates", len(certs))
	}

	// --root-ca-file wins, and must hold certificates.
	rootFile := filepath.Join(t.TempDir(), "root.crt")
	if err := os.WriteFile(rootFile, serving, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := rootCA(rootFile, servingFile); err != nil || string(got) != string(serving) {
		t.Errorf("--root-ca-file: %d bytes, %v; want the file", len(got), err)
	}
	if err := os.WriteFile(rootFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := rootCA(rootFile, servingFile); err == nil || !strings.Contains(err.Error(), "--root-ca-file") {
		t.Errorf("a --root-ca-file without certificates: %v, want an error naming the flag", err)
	}
}
