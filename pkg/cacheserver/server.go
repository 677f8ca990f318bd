package cacheserver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/notfoundhandler"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/exepages"
	"github.com/shardplane/shardplane/pkg/kubeconfig"
	"github.com/shardplane/shardplane/pkg/servercmd"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd"
)

// Run starts a cache server with the given options and serves until ctx is
// done.
func Run(ctx context.Context, o *Options) error {
	servercmd.LogWarnings(klog.FromContext(ctx), o.warnings)
	if err := o.validateOwn(); err != nil {
		return err
	}
	if err := o.PrepareRootDirectory(); err != nil {
		return err
	}
	// Replicas of different shards and clusters share names.
	if err := kstorage.DisableWatchListClient(); err != nil {
		return err
	}
	// List snapshots keep copy-on-write btree versions of every watch
	// cache for the history window: memory spent on lists that shards,
	// which list once and then watch, never make.
	if err := servercmd.ProcessDefaults([]string{"ListFromCacheSnapshot"}, nil); err != nil {
		return err
	}
	var etcdURL string
	if o.EmbeddedEtcd() {
		var etcd *embeddedetcd.Server
		var stop func()
		var err error
		etcdOptions := embeddedetcd.Options{
			Directory:  o.EtcdDirectory(),
			ClientPort: o.EmbeddedEtcdClientPort,
			PeerPort:   o.EmbeddedEtcdPeerPort,
			PageOut:    exepages.PageOut,
		}
		if err := o.EmbeddedEtcdTuning.ApplyTo(&etcdOptions); err != nil {
			return err
		}
		ctx, etcd, stop, err = embeddedetcd.StartForServer(ctx, etcdOptions)
		if err != nil {
			return err
		}
		defer stop()
		etcdURL = etcd.ClientURL
	}
	completed, err := o.Complete(etcdURL)
	if err != nil {
		return err
	}
	if err := completed.Validate(); err != nil {
		return err
	}
	config, err := NewConfig(ctx, completed)
	if err != nil {
		return err
	}
	server, err := config.Complete().New()
	if err != nil {
		return err
	}
	return servercmd.StopCause(ctx, server.Run(ctx))
}

// Server is a cache server: the generic API server with the replicated
// kinds installed.
type Server struct {
	CompletedConfig
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// New creates the cache server with every replicated kind installed.
func (c CompletedConfig) New() (*Server, error) {
	gs, err := c.Generic.New("shardplane-cache-server", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	a, err := newAPIs(apisConfig{
		restOptions:         c.restOptions,
		authorizer:          c.Generic.Authorization.Authorizer,
		maxRequestBodyBytes: c.Generic.MaxRequestBodyBytes,
		minRequestTimeout:   time.Duration(c.Generic.MinRequestTimeout) * time.Second,
	})
	if err != nil {
		return nil, err
	}
	// Destroy runs once the server no longer serves.
	gs.RegisterDestroyFunc(a.destroy)
	for _, group := range a.groupList() {
		gs.DiscoveryGroupManager.AddGroup(group)
		if gs.AggregatedDiscoveryGroupManager != nil {
			for _, v := range group.Versions {
				gs.AggregatedDiscoveryGroupManager.AddGroupVersion(group.Name, a.aggregatedDiscovery(schema.GroupVersion{Group: group.Name, Version: v.Version}))
			}
		}
	}
	// The replicated kinds are known from the start: an unknown one is
	// never a path still being installed.
	notFound := notfoundhandler.New(c.Generic.Serializer, func(context.Context) bool { return true })
	gs.Handler.NonGoRestfulMux.HandlePrefix("/apis/", a.serve(notFound))

	if o := c.standalone; o != nil {
		gs.AddPostStartHookOrDie("shardplane-cache-kubeconfigs", func(genericapiserver.PostStartHookContext) error {
			return writeKubeconfigs(*o)
		})
	}
	return &Server{CompletedConfig: c, GenericAPIServer: gs}, nil
}

// Handler serves the whole cache server: path parsing, authentication,
// authorization and the replicated kinds. A process that embeds the cache
// server mounts it below ServicePrefix.
func (s *Server) Handler() http.Handler { return s.GenericAPIServer.Handler }

// Run serves until ctx is done.
func (s *Server) Run(ctx context.Context) error {
	prepared := s.GenericAPIServer.PrepareRun()
	if o := s.standalone; o != nil && o.ReleaseStartupPages {
		go exepages.ReleaseWhenReady(ctx, prepared.Handler.NonGoRestfulMux)
	}
	return prepared.RunWithContext(ctx)
}

// writeKubeconfigs writes the admin kubeconfig (system:masters by token)
// and, when the client CA was generated here, the writer kubeconfig (a
// client certificate in the first writer group), both trusting the serving
// certificate.
func writeKubeconfigs(o CompletedOptions) error {
	ca, err := os.ReadFile(o.SecureServing.ServerCert.CertKey.CertFile)
	if err != nil {
		return fmt.Errorf("read serving certificate: %w", err)
	}
	var errs []error
	admin := kubeconfig.Token(o.tokens.ShardAdmin)
	if err := writeKubeconfig(o.AdminKubeconfigPath(), o.BaseURL, ca, "cache-admin", admin); err != nil {
		errs = append(errs, err)
	}
	if o.writerCert != "" {
		writer := clientcmdapi.AuthInfo{}
		if writer.ClientCertificateData, err = os.ReadFile(o.writerCert); err != nil {
			errs = append(errs, err)
		} else if writer.ClientKeyData, err = os.ReadFile(o.writerKey); err != nil {
			errs = append(errs, err)
		} else if err := writeKubeconfig(o.WriterKubeconfigPath(), o.BaseURL, ca, "cache-writer", writer); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		klog.Background().Info("Wrote kubeconfigs", "admin", o.AdminKubeconfigPath(), "writer", o.writerCert != "")
	}
	return utilerrors.NewAggregate(errs)
}

// writeKubeconfig writes a kubeconfig with one cluster, user and context,
// all named "cache" but the user.
func writeKubeconfig(path, server string, ca []byte, userName string, auth clientcmdapi.AuthInfo) error {
	if err := kubeconfig.Write(path, ca, kubeconfig.Context{Name: "cache", Cluster: "cache", Server: server, User: userName, Auth: auth}); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
