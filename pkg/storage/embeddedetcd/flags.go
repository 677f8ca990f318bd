package embeddedetcd

import (
	"fmt"
	"net/url"

	"github.com/spf13/pflag"
)

// TuningFlags are kcp's --embedded-etcd-* flags that tune an embedded etcd
// beyond its directory and ports; every binary with an embedded etcd takes
// them.
type TuningFlags struct {
	WALSizeBytes      int64
	QuotaBackendBytes int64
	ListenMetricsURLs []string
	ForceNewCluster   bool
}

// AddFlags registers the flags.
func (f *TuningFlags) AddFlags(fs *pflag.FlagSet) {
	fs.Int64Var(&f.WALSizeBytes, "embedded-etcd-wal-size-bytes", f.WALSizeBytes, "Size of each write-ahead log file of the embedded etcd (0: etcd's default).")
	fs.Int64Var(&f.QuotaBackendBytes, "embedded-etcd-quota-backend-bytes", f.QuotaBackendBytes, "Database size at which the embedded etcd raises its space alarm (0: etcd's default).")
	fs.StringSliceVar(&f.ListenMetricsURLs, "embedded-etcd-listen-metrics-urls", f.ListenMetricsURLs, "URLs (http://host:port) where the embedded etcd also serves its /metrics.")
	fs.BoolVar(&f.ForceNewCluster, "embedded-etcd-force-new-cluster", f.ForceNewCluster, "Start the embedded etcd as a new one-member cluster from data restored from another cluster.")
}

// ApplyTo sets the flags' values in o.
func (f TuningFlags) ApplyTo(o *Options) error {
	o.WALSegmentSizeBytes = f.WALSizeBytes
	o.QuotaBackendBytes = f.QuotaBackendBytes
	o.ForceNewCluster = f.ForceNewCluster
	o.ListenMetricsURLs = nil
	for _, s := range f.ListenMetricsURLs {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("--embedded-etcd-listen-metrics-urls: %q is not an http(s)://host:port URL", s)
		}
		o.ListenMetricsURLs = append(o.ListenMetricsURLs, *u)
	}
	return nil
}
