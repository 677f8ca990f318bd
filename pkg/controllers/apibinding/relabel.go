package apibinding

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
)

// emptyPatch rewrites an object unchanged, so that admission sets its
// claim labels; kcp's controller does the same.
var emptyPatch = []byte("{}")

// Relabeler rewrites the objects of a claimed resource whose claim labels
// differ from what their workspace's bindings give them.
type Relabeler struct {
	loopback *rest.Config
	client   *http.Client
	// bindings returns the APIBindings of a cluster, as admission sees them.
	bindings func(logicalcluster.Name) []*apisv1alpha2.APIBinding
}

// NewRelabeler returns a Relabeler that acts through the shard's loopback
// configuration.
func NewRelabeler(loopback *rest.Config, bindings func(logicalcluster.Name) []*apisv1alpha2.APIBinding) (*Relabeler, error) {
	client, err := rest.HTTPClientFor(loopback)
	if err != nil {
		return nil, err
	}
	return &Relabeler{loopback: loopback, client: client, bindings: bindings}, nil
}

// Relabel patches every object of gr in cluster whose claim labels are not
// the ones its bindings give it. A resource the cluster does not serve
// (a claim of an export nobody there binds) has no objects to label.
func (r *Relabeler) Relabel(ctx context.Context, cluster logicalcluster.Name, gr schema.GroupResource) error {
	resource, served, err := r.resource(ctx, cluster, gr)
	if err != nil || !served {
		return err
	}
	bindings := r.bindings(cluster)
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := resource.List(ctx, opts)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", gr, err)
		}
		for _, obj := range list.Items {
			if !permissionclaim.Stale(bindings, gr, obj.Labels) {
				continue
			}
			if err := touch(ctx, resource, gr, obj.Namespace, obj.Name); err != nil {
				return err
			}
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// RelabelObject patches one object of gr in cluster, for admission to set
// its claim labels. An object or resource that is gone needs nothing.
func (r *Relabeler) RelabelObject(ctx context.Context, cluster logicalcluster.Name, gr schema.GroupResource, namespace, name string) error {
	resource, served, err := r.resource(ctx, cluster, gr)
	if err != nil || !served {
		return err
	}
	return touch(ctx, resource, gr, namespace, name)
}

// resource returns a metadata client of gr in cluster, in the version the
// cluster prefers; served is false when the cluster does not serve gr's
// group.
func (r *Relabeler) resource(ctx context.Context, cluster logicalcluster.Name, gr schema.GroupResource) (metadata.Getter, bool, error) {
	cfg := kcpclient.ClusterConfig(r.loopback, cluster)
	version, served, err := r.preferredVersion(ctx, cfg, gr.Group)
	if err != nil || !served {
		return nil, false, err
	}
	client, err := metadata.NewForConfigAndClient(cfg, r.client)
	if err != nil {
		return nil, false, err
	}
	return client.Resource(gr.WithVersion(version)), true, nil
}

// touch writes an object unchanged (emptyPatch); a gone object is fine.
func touch(ctx context.Context, resource metadata.Getter, gr schema.GroupResource, namespace, name string) error {
	_, err := resource.Namespace(namespace).Patch(ctx, name, types.MergePatchType, emptyPatch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("relabelling %s %s/%s: %w", gr, namespace, name, err)
	}
	return nil
}

// preferredVersion returns the version of group the cluster prefers; core
// is v1. served is false when the cluster does not serve the group.
func (r *Relabeler) preferredVersion(ctx context.Context, cfg *rest.Config, group string) (string, bool, error) {
	if group == "" {
		return "v1", true, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/apis/"+group, nil)
	if err != nil {
		return "", false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return "", false, fmt.Errorf("discovering group %q: %w", group, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return "", false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return "", false, fmt.Errorf("discovering group %q: %s", group, resp.Status)
	}
	var g metav1.APIGroup
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&g); err != nil {
		return "", false, fmt.Errorf("discovering group %q: %w", group, err)
	}
	return g.PreferredVersion.Version, g.PreferredVersion.Version != "", nil
}
