package shard

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Files the shard keeps in its root directory. They are generated once and
// reused, so that restarts keep certificates, keys and tokens stable.
const (
	AdminKubeconfigFile   = "admin.kubeconfig"
	ClientCACertFile      = "client-ca.crt"
	ClientCAKeyFile       = "client-ca.key"
	ServiceAccountKeyFile = "service-account.key"
	adminTokensFile       = ".admin-tokens.json"
	servingCertPairName   = "apiserver"
)

// adminTokens are the bearer tokens of the users in admin.kubeconfig.
type adminTokens struct {
	KCPAdmin   string `json:"kcpAdmin"`
	ShardAdmin string `json:"shardAdmin"`
	// LogicalClusterAdmin is the shard's own identity when it creates
	// LogicalClusters through a shard's baseURL.
	LogicalClusterAdmin string `json:"logicalClusterAdmin"`
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// ensureAdminTokens reads the admin tokens from dir, creating them once.
func ensureAdminTokens(dir string) (adminTokens, error) {
	path := filepath.Join(dir, adminTokensFile)
	var t adminTokens
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &t); err != nil {
			return t, fmt.Errorf("corrupt admin token file %s: remove it to generate new tokens", path)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return t, err
	}
	changed := false
	for _, tok := range []*string{&t.KCPAdmin, &t.ShardAdmin, &t.LogicalClusterAdmin} {
		if *tok != "" {
			continue
		}
		var err error
		if *tok, err = randomToken(); err != nil {
			return t, err
		}
		changed = true
	}
	if !changed {
		return t, nil
	}
	data, _ := json.Marshal(t)
	return t, os.WriteFile(path, data, 0o600)
}

// ensureClientCA creates a CA for client certificates in dir once.
func ensureClientCA(dir string) error {
	certPath, keyPath := filepath.Join(dir, ClientCACertFile), filepath.Join(dir, ClientCAKeyFile)
	if fileExists(certPath) && fileExists(keyPath) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "kplane-client-ca"}, key)
	if err != nil {
		return fmt.Errorf("generate client CA: %w", err)
	}
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

// ensureServiceAccountKey creates the key that signs service account tokens.
func ensureServiceAccountKey(dir string) (string, error) {
	path := filepath.Join(dir, ServiceAccountKeyFile)
	if fileExists(path) {
		return path, nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	pem, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, pem, 0o600)
}

// writeAdminKubeconfig writes the kubeconfig described in API.md: clusters
// root, base and system:admin; users kcp-admin and shard-admin.
func writeAdminKubeconfig(path, baseURL string, caData []byte, tokens adminTokens) error {
	cfg := clientcmdapi.NewConfig()
	for name, server := range map[string]string{
		"root":         baseURL + "/clusters/root",
		"base":         baseURL,
		"system:admin": baseURL + "/clusters/system:admin",
	} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	}
	cfg.AuthInfos["kcp-admin"] = &clientcmdapi.AuthInfo{Token: tokens.KCPAdmin}
	cfg.AuthInfos["shard-admin"] = &clientcmdapi.AuthInfo{Token: tokens.ShardAdmin}
	for name, c := range map[string][2]string{
		"root":         {"root", "kcp-admin"},
		"base":         {"base", "kcp-admin"},
		"system:admin": {"system:admin", "kcp-admin"},
		"shard-base":   {"base", "shard-admin"},
	} {
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: c[0], AuthInfo: c[1]}
	}
	cfg.CurrentContext = "root"
	return clientcmd.WriteToFile(*cfg, path)
}
