package frontproxy

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/shardplane/shardplane/pkg/rootdir"
)

// parsedOptions are the options of a front-proxy command line.
func parsedOptions(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	var fss cliflag.NamedFlagSets
	o.AddFlags(&fss)
	fs := pflag.NewFlagSet("front-proxy", pflag.ContinueOnError)
	for _, f := range fss.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestServingCertificateIsGeneratedOnceInTheRootDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "front-proxy")
	o := parsedOptions(t, "--root-directory="+dir, "--bind-address=127.0.0.1", "--mapping-file=m.yaml", "--root-kubeconfig=root.kubeconfig")
	if err := o.PrepareRootDirectory(); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, rootdir.ServingCertPairName+".crt"); o.SecureServing.ServerCert.CertKey.CertFile != want {
		t.Fatalf("serving certificate %q, want %q", o.SecureServing.ServerCert.CertKey.CertFile, want)
	}
	first, err := os.ReadFile(o.SecureServing.ServerCert.CertKey.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(first)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if err := cert.VerifyHostname(host); err != nil {
			t.Errorf("serving certificate does not cover %s: %v", host, err)
		}
	}

	again := parsedOptions(t, "--root-directory="+dir)
	if err := again.PrepareRootDirectory(); err != nil {
		t.Fatal(err)
	}
	if second, err := os.ReadFile(again.SecureServing.ServerCert.CertKey.CertFile); err != nil || string(second) != string(first) {
		t.Errorf("the serving certificate changed on the second start (%v)", err)
	}

	completed, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	if completed.ShardsKubeconfig != "root.kubeconfig" {
		t.Errorf("shards kubeconfig %q, want --root-kubeconfig's", completed.ShardsKubeconfig)
	}
	if err := completed.Validate(); err != nil {
		t.Error(err)
	}
}

func TestGivenServingCertificateWinsOverTheRootDirectory(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "front-proxy")
	o := parsedOptions(t, "--root-directory="+dir, "--tls-cert-file=/etc/tls/tls.crt", "--tls-private-key-file=/etc/tls/tls.key")
	if err := o.PrepareRootDirectory(); err != nil {
		t.Fatal(err)
	}
	if got := o.SecureServing.ServerCert.CertKey; got.CertFile != "/etc/tls/tls.crt" || got.KeyFile != "/etc/tls/tls.key" {
		t.Errorf("serving certificate %+v, want the given one", got)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("root directory created although a certificate was given (%v)", err)
	}
}

func TestCertDirKeepsTheGeneratedCertificateThere(t *testing.T) {
	dir := t.TempDir()
	o := parsedOptions(t, "--cert-dir="+dir, "--root-directory="+filepath.Join(dir, "unused"))
	if err := o.PrepareRootDirectory(); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "front-proxy.crt"); o.SecureServing.ServerCert.CertKey.CertFile != want {
		t.Errorf("serving certificate %q, want %q", o.SecureServing.ServerCert.CertKey.CertFile, want)
	}
}

func TestCompleteNeedsTheMappingFileAndTheRootKubeconfig(t *testing.T) {
	o := parsedOptions(t, "--root-directory="+t.TempDir())
	if err := o.PrepareRootDirectory(); err != nil {
		t.Fatal(err)
	}
	_, err := o.Complete()
	if err == nil || !strings.Contains(err.Error(), "--mapping-file") || !strings.Contains(err.Error(), "--root-kubeconfig") {
		t.Errorf("got %v, want errors naming --mapping-file and --root-kubeconfig", err)
	}
}

func TestCompleteRefusesOptionsWithoutAServingCertificate(t *testing.T) {
	o := parsedOptions(t, "--mapping-file=m.yaml", "--root-kubeconfig=root.kubeconfig")
	if _, err := o.Complete(); err == nil {
		t.Error("Complete before PrepareRootDirectory succeeded")
	}
}
