package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCertificateSigningRequestsAreServedPerWorkspace: kcp serves
// certificates.k8s.io CertificateSigningRequests in every workspace; one
// workspace's requests are not another's.
func TestCertificateSigningRequestsAreServedPerWorkspace(t *testing.T) {
	t.Parallel()
	e := startWorkspaceShard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "csr")
	mine := readyWorkspace(ctx, t, kcp, org.path(), "mine", nil)
	theirs := readyWorkspace(ctx, t, kcp, org.path(), "theirs", nil)

	resources, err := e.kube(t, kcpAdmin, mine.path()).Discovery().ServerResourcesForGroupVersion(certificatesv1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatalf("discovery of %s: %v", certificatesv1.SchemeGroupVersion, err)
	}
	found := false
	for _, r := range resources.APIResources {
		found = found || r.Name == "certificatesigningrequests"
	}
	if !found {
		t.Fatalf("%s lists %+v, not certificatesigningrequests", certificatesv1.SchemeGroupVersion, resources.APIResources)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "user-1", Organization: []string{"team"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "user-1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}
	created, err := e.kube(t, kcpAdmin, mine.path()).CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create CertificateSigningRequest: %v", err)
	}
	if created.Spec.Username == "" {
		t.Errorf("spec.username not set from the requester: %+v", created.Spec)
	}
	if _, err := e.kube(t, kcpAdmin, theirs.path()).CertificatesV1().CertificateSigningRequests().Get(ctx, "user-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("another workspace reads the request: %v, want 404", err)
	}
}
