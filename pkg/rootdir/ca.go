package rootdir

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// keyBits is the size of the RSA keys of generated CAs and certificates:
// RSA as kcp's, whose tooling (library-go's crypto) signs client
// certificates with a CA key it expects to be RSA.
const keyBits = 2048

// EnsureCA creates a CA named name (<name>.crt, <name>.key) once and
// returns the path of its certificate.
func (d Dir) EnsureCA(name, commonName string) (string, error) {
	certPath, keyPath := d.Path(name+".crt"), d.Path(name+".key")
	if fileExists(certPath) && fileExists(keyPath) {
		return certPath, nil
	}
	key, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return "", err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: commonName}, key)
	if err != nil {
		return "", fmt.Errorf("generate CA %s: %w", name, err)
	}
	if err := writeKeyAndCert(keyPath, certPath, key, cert); err != nil {
		return "", err
	}
	return certPath, nil
}

// EnsureClientCert creates a client certificate (<name>.crt, <name>.key)
// for commonName in groups, signed by the CA ca of the directory, once,
// and returns the paths of certificate and key.
func (d Dir) EnsureClientCert(name, ca, commonName string, groups ...string) (certFile, keyFile string, err error) {
	certFile, keyFile = d.Path(name+".crt"), d.Path(name+".key")
	if fileExists(certFile) && fileExists(keyFile) {
		return certFile, keyFile, nil
	}
	caCerts, err := certutil.CertsFromFile(d.Path(ca + ".crt"))
	if err != nil {
		return "", "", err
	}
	caKey, err := keyutil.PrivateKeyFromFile(d.Path(ca + ".key"))
	if err != nil {
		return "", "", err
	}
	signer, ok := caKey.(crypto.Signer)
	if !ok {
		return "", "", fmt.Errorf("CA key %s cannot sign", ca)
	}
	key, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: groups},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, caCerts[0], key.Public(), signer)
	if err != nil {
		return "", "", fmt.Errorf("sign client certificate %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return "", "", err
	}
	return certFile, keyFile, writeKeyAndCert(keyFile, certFile, key, cert)
}

func writeKeyAndCert(keyPath, certPath string, key crypto.PrivateKey, cert *x509.Certificate) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return err
	}
	return os.WriteFile(certPath, certPEM, 0o644)
}
