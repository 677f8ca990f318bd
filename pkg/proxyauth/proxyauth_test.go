package proxyauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/utils/lru"
)

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T, name string) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &ca{cert: cert, key: key, pool: pool}
}

func (c *ca) client(t *testing.T, cn string, notAfter time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

// newAuthenticator trusts *roots (which a test may swap) and the names.
func newAuthenticator(roots **x509.CertPool, names ...string) *Authenticator {
	return &Authenticator{
		verifyOptions: func() (x509.VerifyOptions, bool) {
			return x509.VerifyOptions{Roots: *roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
		},
		allowedClientNames: headerrequest.StaticStringSlice(names),
		headers: headerrequest.NewDynamic(headerrequest.StaticStringSlice{"X-Remote-User"}, headerrequest.StaticStringSlice{"X-Remote-Uid"},
			headerrequest.StaticStringSlice{"X-Remote-Group"}, headerrequest.StaticStringSlice{"X-Remote-Extra-"}),
		verified: lru.New(cacheSize),
		now:      time.Now,
	}
}

func request(cert *x509.Certificate) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "https://shard/clusters/root/api", nil)
	req.Header.Set("X-Remote-User", "alice")
	req.Header.Add("X-Remote-Group", "team")
	if cert != nil {
		req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	}
	return req
}

func TestVerifiesTheChainOncePerCertificate(t *testing.T) {
	proxyCA := newCA(t, "front-proxy-ca")
	roots := proxyCA.pool
	a := newAuthenticator(&roots, "front-proxy")
	cert := proxyCA.client(t, "front-proxy", time.Now().Add(time.Hour))
	for i := 0; i < 3; i++ {
		resp, ok, err := a.AuthenticateRequest(request(cert))
		if err != nil || !ok {
			t.Fatalf("request %d: ok=%v err=%v", i, ok, err)
		}
		if resp.User.GetName() != "alice" || len(resp.User.GetGroups()) != 1 || resp.User.GetGroups()[0] != "team" {
			t.Fatalf("request %d: user %+v", i, resp.User)
		}
	}
	if n := a.verifications.Load(); n != 1 {
		t.Fatalf("%d verifications for three requests with one certificate, want 1", n)
	}
	// Another connection presents another certificate object: verified anew.
	if _, ok, err := a.AuthenticateRequest(request(proxyCA.client(t, "front-proxy", time.Now().Add(time.Hour)))); !ok || err != nil {
		t.Fatalf("second certificate: ok=%v err=%v", ok, err)
	}
	if n := a.verifications.Load(); n != 2 {
		t.Fatalf("%d verifications, want 2", n)
	}
}

func TestRefusesCertificatesOfOtherCAsEveryTime(t *testing.T) {
	proxyCA, clientCA := newCA(t, "front-proxy-ca"), newCA(t, "client-ca")
	roots := proxyCA.pool
	a := newAuthenticator(&roots)
	cert := clientCA.client(t, "front-proxy", time.Now().Add(time.Hour))
	for i := 0; i < 2; i++ {
		if _, ok, err := a.AuthenticateRequest(request(cert)); ok || err == nil {
			t.Fatalf("request %d with a certificate of another CA: ok=%v err=%v", i, ok, err)
		}
	}
	if _, ok, err := a.AuthenticateRequest(request(nil)); ok || err != nil {
		t.Fatalf("request without a certificate: ok=%v err=%v, want not judged", ok, err)
	}
}

func TestRefusesNamesNotAllowed(t *testing.T) {
	proxyCA := newCA(t, "front-proxy-ca")
	roots := proxyCA.pool
	a := newAuthenticator(&roots, "front-proxy")
	if _, ok, err := a.AuthenticateRequest(request(proxyCA.client(t, "someone-else", time.Now().Add(time.Hour)))); ok || err == nil {
		t.Fatalf("certificate with another common name: ok=%v err=%v", ok, err)
	}
}

func TestANewCABundleAndExpiryEndTheRememberedVerification(t *testing.T) {
	proxyCA, otherCA := newCA(t, "front-proxy-ca"), newCA(t, "other-ca")
	roots := proxyCA.pool
	a := newAuthenticator(&roots)
	notAfter := time.Now().Add(time.Minute)
	cert := proxyCA.client(t, "front-proxy", notAfter)
	if _, ok, err := a.AuthenticateRequest(request(cert)); !ok || err != nil {
		t.Fatalf("first request: ok=%v err=%v", ok, err)
	}
	// The request-header CA file now holds another CA.
	roots = otherCA.pool
	if _, ok, err := a.AuthenticateRequest(request(cert)); ok || err == nil {
		t.Fatalf("after the CA changed: ok=%v err=%v", ok, err)
	}
	roots = proxyCA.pool
	if _, ok, err := a.AuthenticateRequest(request(cert)); !ok || err != nil {
		t.Fatalf("CA back: ok=%v err=%v", ok, err)
	}
	// Past the certificate's expiry, the remembered verification ends.
	a.now = func() time.Time { return notAfter.Add(time.Second) }
	if _, ok, err := a.AuthenticateRequest(request(cert)); ok || err == nil {
		t.Fatalf("expired certificate: ok=%v err=%v", ok, err)
	}
}
