// Package rootdir owns the files a process of the project generates once in
// its root directory and reuses on every start, so that restarts keep
// certificates, keys and tokens stable: the serving certificate, the client
// CA, the service-account signing key, the admin tokens and the admin
// kubeconfig. Every binary serves TLS and authenticates its admins from
// here.
package rootdir

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/kubeconfig"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Files kept in a root directory.
const (
	AdminKubeconfigFile = "admin.kubeconfig"
	// ClientCAName names the CA of client certificates (EnsureClientCert's ca).
	ClientCAName          = "client-ca"
	ClientCACertFile      = ClientCAName + ".crt"
	ClientCAKeyFile       = ClientCAName + ".key"
	ServiceAccountKeyFile = "service-account.key"
	// ServingCertPairName names the serving certificate and key
	// (<name>.crt, <name>.key), as kcp names them.
	ServingCertPairName = "apiserver"
	adminTokensFile     = ".admin-tokens.json"
)

// AdminTokens are the bearer tokens of the users in admin.kubeconfig.
type AdminTokens struct {
	KCPAdmin   string `json:"kcpAdmin"`
	ShardAdmin string `json:"shardAdmin"`
	// LogicalClusterAdmin is the shard's own identity when it creates
	// LogicalClusters through a shard's baseURL.
	LogicalClusterAdmin string `json:"logicalClusterAdmin"`
}

// Dir is a root directory that exists.
type Dir string

// Open makes path absolute and creates it (mode 0700) when missing.
func Open(path string) (Dir, error) {
	if path == "" {
		return "", errors.New("root directory must not be empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("create root directory: %w", err)
	}
	return Dir(abs), nil
}

// Path returns the path of a file in the directory.
func (d Dir) Path(name string) string { return filepath.Join(string(d), name) }

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

// EnsureAdminTokens reads the admin tokens, creating missing ones once.
func (d Dir) EnsureAdminTokens() (AdminTokens, error) {
	path := d.Path(adminTokensFile)
	var t AdminTokens
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

// EnsureClientCA creates a CA for client certificates once and returns the
// path of its certificate.
func (d Dir) EnsureClientCA() (string, error) {
	return d.EnsureCA(ClientCAName, "shardplane-client-ca")
}

// EnsureServiceAccountKey creates the key that signs service account tokens
// once and returns its path.
func (d Dir) EnsureServiceAccountKey() (string, error) {
	path := d.Path(ServiceAccountKeyFile)
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

// EnsureServingCert creates a self-signed serving certificate for names
// (see ServingHosts) once, and returns the paths of certificate and key.
// The certificate is its own CA: clients trust it through the admin
// kubeconfig.
func (d Dir) EnsureServingCert(names ServingNames) (certFile, keyFile string, err error) {
	certFile, keyFile = d.Path(ServingCertPairName+".crt"), d.Path(ServingCertPairName+".key")
	if fileExists(certFile) && fileExists(keyFile) {
		return certFile, keyFile, nil
	}
	ips, dns := names.alternates()
	cert, key, err := certutil.GenerateSelfSignedCertKey(names.Host, ips, dns)
	if err != nil {
		return "", "", fmt.Errorf("generate serving certificate: %w", err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(certFile, cert, 0o644)
}

// WriteAdminKubeconfig writes the kubeconfig described in docs/api.md: clusters
// root, base and system:admin; users kcp-admin and shard-admin; contexts
// root, base, system:admin and shard-base (current: root).
func WriteAdminKubeconfig(path, baseURL string, caData []byte, tokens AdminTokens) error {
	contexts := kubeconfig.Workspaces(baseURL, identities.KCPAdminUser, kubeconfig.Token(tokens.KCPAdmin), logicalcluster.Root, logicalcluster.SystemAdmin)
	contexts = append(contexts, kubeconfig.Context{Name: "shard-base", Cluster: "base", Server: baseURL, User: identities.ShardAdminUser, Auth: kubeconfig.Token(tokens.ShardAdmin)})
	return kubeconfig.Write(path, caData, contexts...)
}
