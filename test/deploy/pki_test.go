package deploy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// certManager issues the rendered Certificates as cert-manager would: each
// Secret gets tls.crt, tls.key and ca.crt (the issuer's CA), signed by the
// Certificate's Issuer (selfSigned, or ca with the CA's Secret).
type certManager struct {
	issuers      map[string]map[string]interface{} // name -> spec
	certificates map[string]*unstructured.Unstructured
	bySecret     map[string]string // secret name -> certificate name
	issued       map[string]*issuedCert
}

type issuedCert struct {
	cert *x509.Certificate
	key  crypto.Signer
	ca   *x509.Certificate
}

// issueCertificates returns the Secrets the rendered Certificates produce.
func issueCertificates(objs []*unstructured.Unstructured) (map[string]map[string][]byte, error) {
	cm := &certManager{issuers: map[string]map[string]interface{}{}, certificates: map[string]*unstructured.Unstructured{}, bySecret: map[string]string{}, issued: map[string]*issuedCert{}}
	for _, o := range objs {
		switch o.GetKind() {
		case "Issuer":
			spec, _, _ := unstructured.NestedMap(o.Object, "spec")
			cm.issuers[o.GetName()] = spec
		case "Certificate":
			cm.certificates[o.GetName()] = o
			secret, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
			cm.bySecret[secret] = o.GetName()
		}
	}
	secrets := map[string]map[string][]byte{}
	for name, c := range cm.certificates {
		ic, err := cm.issue(name, 0)
		if err != nil {
			return nil, err
		}
		certPEM, err := certutil.EncodeCertificates(ic.cert)
		if err != nil {
			return nil, err
		}
		keyPEM, err := keyutil.MarshalPrivateKeyToPEM(ic.key)
		if err != nil {
			return nil, err
		}
		caPEM, err := certutil.EncodeCertificates(ic.ca)
		if err != nil {
			return nil, err
		}
		secret, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
		secrets[secret] = map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": caPEM}
	}
	return secrets, nil
}

func (cm *certManager) issue(name string, depth int) (*issuedCert, error) {
	if ic, ok := cm.issued[name]; ok {
		return ic, nil
	}
	if depth > 5 {
		return nil, fmt.Errorf("certificate %s: issuer chain too long", name)
	}
	c := cm.certificates[name]
	spec, _, _ := unstructured.NestedMap(c.Object, "spec")
	str := func(path ...string) string { v, _, _ := unstructured.NestedString(spec, path...); return v }
	strs := func(path ...string) []string { v, _, _ := unstructured.NestedStringSlice(spec, path...); return v }
	isCA, _, _ := unstructured.NestedBool(spec, "isCA")

	var key crypto.Signer
	var err error
	switch str("privateKey", "algorithm") {
	case "RSA":
		size, _, _ := unstructured.NestedInt64(spec, "privateKey", "size")
		if size == 0 {
			size = 2048
		}
		key, err = rsa.GenerateKey(rand.Reader, int(size))
	case "ECDSA", "":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		return nil, fmt.Errorf("certificate %s: key algorithm %q", name, str("privateKey", "algorithm"))
	}
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: str("commonName"), Organization: strs("subject", "organizations")},
		DNSNames:     strs("dnsNames"),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	for _, ip := range strs("ipAddresses") {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	for _, u := range strs("usages") {
		switch u {
		case "server auth":
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		case "client auth":
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		case "digital signature":
			tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
		case "key encipherment":
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		case "cert sign":
			tmpl.KeyUsage |= x509.KeyUsageCertSign
		default:
			return nil, fmt.Errorf("certificate %s: usage %q not known to the check", name, u)
		}
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	}

	issuerName := str("issuerRef", "name")
	if kind := str("issuerRef", "kind"); kind != "" && kind != "Issuer" {
		return nil, fmt.Errorf("certificate %s: issuer kind %s is not rendered by the chart", name, kind)
	}
	issuer, ok := cm.issuers[issuerName]
	if !ok {
		return nil, fmt.Errorf("certificate %s: issuer %s is not rendered", name, issuerName)
	}
	parent, signer := tmpl, key
	var ca *x509.Certificate
	switch {
	case issuer["selfSigned"] != nil:
	case issuer["ca"] != nil:
		secret, _, _ := unstructured.NestedString(issuer, "ca", "secretName")
		caCert, ok := cm.bySecret[secret]
		if !ok {
			return nil, fmt.Errorf("certificate %s: CA secret %s of issuer %s comes from no Certificate", name, secret, issuerName)
		}
		parentIssued, err := cm.issue(caCert, depth+1)
		if err != nil {
			return nil, err
		}
		if !parentIssued.cert.IsCA {
			return nil, fmt.Errorf("certificate %s: issuer %s's certificate %s is not a CA", name, issuerName, caCert)
		}
		parent, signer, ca = parentIssued.cert, parentIssued.key, parentIssued.cert
	default:
		return nil, fmt.Errorf("certificate %s: issuer %s is neither selfSigned nor ca", name, issuerName)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if ca == nil {
		ca = cert
	}
	ic := &issuedCert{cert: cert, key: key, ca: ca}
	cm.issued[name] = ic
	return ic, nil
}
