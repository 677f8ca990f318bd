// Package boundapis tells the CRD server which resources the APIBindings of
// each logical cluster serve, and with which schema and identity.
//
// A binding serves what its status.boundResources records: the APIBinding
// controller writes it once the export, its schemas and the absence of
// naming conflicts are checked. Each APIResourceSchema becomes one
// established CRD, built once per schema (schemas are immutable) and shared
// by every binding of it. A schema that was deleted after it was bound
// keeps serving from that CRD while the process runs.
package boundapis

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/apiextensions"
	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Annotations of a bound CRD, as in kcp: where its schema comes from.
const (
	SchemaClusterAnnotation = "apis.kcp.io/schema-cluster"
	SchemaNameAnnotation    = "apis.kcp.io/schema-name"
)

// byIdentity indexes bindings by "<identity>|<group>|<resource>" of every
// resource they bind; bySchema by "<schema UID>|<identity>"; byResource by
// "<group>|<resource>".
const (
	byIdentity = "apibinding-bound-identity"
	bySchema   = "apibinding-bound-schema"
	byResource = "apibinding-bound-resource"
)

func identityKey(identity, group, resource string) string {
	return identity + "|" + group + "|" + resource
}

func schemaKey(uid, identity string) string { return uid + "|" + identity }

func resourceKey(group, resource string) string { return group + "|" + resource }

func boundIndex(key func(br apisv1alpha2.BoundAPIResource) string) cache.IndexFunc {
	return func(obj interface{}) ([]string, error) {
		b, ok := obj.(*apisv1alpha2.APIBinding)
		if !ok {
			return nil, nil
		}
		keys := make([]string, 0, len(b.Status.BoundResources))
		for _, br := range b.Status.BoundResources {
			keys = append(keys, key(br))
		}
		return keys, nil
	}
}

// Index reads bindings and schemas from the shard's wildcard informers.
type Index struct {
	bindings *wildcardinformer.Informer
	// schemas are the shard's own APIResourceSchemas and the replicas of
	// other shards', read in that order.
	schemas []*wildcardinformer.Informer

	// crds are the schemas as CRDs, by schema UID.
	mu   sync.RWMutex
	crds map[types.UID]*apiextensionsv1.CustomResourceDefinition
	// virtual are the CRDs of virtual resources, by schemaKey.
	virtual map[string]*apiextensionsv1.CustomResourceDefinition
}

// New indexes bindings (APIBindings of all clusters) and reads schemas
// (APIResourceSchemas of all clusters: the shard's own, then other shards'
// from the cache server); call it before the informers run.
func New(bindings *wildcardinformer.Informer, schemas ...*wildcardinformer.Informer) (*Index, error) {
	if err := bindings.AddIndexers(cache.Indexers{
		byIdentity: boundIndex(func(br apisv1alpha2.BoundAPIResource) string {
			return identityKey(br.Schema.IdentityHash, br.Group, br.Resource)
		}),
		bySchema: boundIndex(func(br apisv1alpha2.BoundAPIResource) string {
			return schemaKey(br.Schema.UID, br.Schema.IdentityHash)
		}),
		byResource: boundIndex(func(br apisv1alpha2.BoundAPIResource) string {
			return resourceKey(br.Group, br.Resource)
		}),
	}); err != nil {
		return nil, err
	}
	return &Index{bindings: bindings, schemas: schemas, crds: map[types.UID]*apiextensionsv1.CustomResourceDefinition{}, virtual: map[string]*apiextensionsv1.CustomResourceDefinition{}}, nil
}

var _ apiextensions.BoundAPIs = (*Index)(nil)

// Get implements apiextensions.BoundAPIs.
func (x *Index) Get(cluster logicalcluster.Name, group, resource string) (apiextensions.BoundResource, bool) {
	for _, b := range x.bindingsOf(cluster) {
		for _, br := range b.Status.BoundResources {
			if br.Group == group && br.Resource == resource {
				return x.resolve(b, br)
			}
		}
	}
	return apiextensions.BoundResource{}, false
}

// List implements apiextensions.BoundAPIs.
func (x *Index) List(cluster logicalcluster.Name) []apiextensions.BoundResource {
	var out []apiextensions.BoundResource
	for _, b := range x.bindingsOf(cluster) {
		for _, br := range b.Status.BoundResources {
			if r, ok := x.resolve(b, br); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// ForIdentity implements apiextensions.BoundAPIs. When bindings of the
// identity are at different schemas (an export moving to a new one), the
// newest binding's wins.
func (x *Index) ForIdentity(group, resource, identity string) (apiextensions.BoundResource, bool) {
	objs, err := x.bindings.ByIndex(byIdentity, identityKey(identity, group, resource))
	if err != nil || len(objs) == 0 {
		return apiextensions.BoundResource{}, false
	}
	sort.Slice(objs, func(i, j int) bool {
		return newer(objs[i].(*apisv1alpha2.APIBinding), objs[j].(*apisv1alpha2.APIBinding))
	})
	for _, o := range objs {
		b := o.(*apisv1alpha2.APIBinding)
		for _, br := range b.Status.BoundResources {
			if br.Group == group && br.Resource == resource && br.Schema.IdentityHash == identity {
				if r, ok := x.resolve(b, br); ok {
					r.Terminating, r.Binding = false, ""
					return r, true
				}
			}
		}
	}
	return apiextensions.BoundResource{}, false
}

// ForGroupResource implements apiextensions.BoundAPIs.
func (x *Index) ForGroupResource(group, resource string) []apiextensions.BoundResource {
	objs, err := x.bindings.ByIndex(byResource, resourceKey(group, resource))
	if err != nil || len(objs) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []apiextensions.BoundResource
	for _, o := range objs {
		b := o.(*apisv1alpha2.APIBinding)
		for _, br := range b.Status.BoundResources {
			key := schemaKey(br.Schema.UID, br.Schema.IdentityHash)
			if br.Group != group || br.Resource != resource || seen[key] {
				continue
			}
			if r, ok := x.resolve(b, br); ok {
				seen[key] = true
				r.Terminating, r.Binding = false, ""
				out = append(out, r)
			}
		}
	}
	// The same answer every time: callers pick the first that fits.
	sort.Slice(out, func(i, j int) bool {
		if out[i].CRD.UID != out[j].CRD.UID {
			return out[i].CRD.UID < out[j].CRD.UID
		}
		return out[i].IdentityHash < out[j].IdentityHash
	})
	return out
}

// InUse implements apiextensions.BoundAPIs.
func (x *Index) InUse(uid types.UID, identity string) bool {
	objs, err := x.bindings.ByIndex(bySchema, schemaKey(string(uid), identity))
	return err == nil && len(objs) > 0
}

func newer(a, b *apisv1alpha2.APIBinding) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.ResourceVersion > b.ResourceVersion
}

// bindingsOf returns the bindings of a cluster sorted by name.
func (x *Index) bindingsOf(cluster logicalcluster.Name) []*apisv1alpha2.APIBinding {
	return bindingsIn(x.bindings, cluster)
}

// bindingsIn returns the bindings of a cluster sorted by name.
func bindingsIn(bindings *wildcardinformer.Informer, cluster logicalcluster.Name) []*apisv1alpha2.APIBinding {
	objs, err := bindings.List(cluster, "")
	if err != nil || len(objs) == 0 {
		return nil
	}
	out := make([]*apisv1alpha2.APIBinding, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*apisv1alpha2.APIBinding))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AdmissionSource returns, for a request on a resource in a logical
// cluster, the logical cluster whose webhooks and admission policies judge
// it, as kcp decides: for a resource an APIBinding of the cluster binds,
// the cluster of the bound APIExport; for any other, the cluster itself.
// bindings are the APIBindings of all clusters.
func AdmissionSource(bindings *wildcardinformer.Informer) func(logicalcluster.Name, schema.GroupResource) logicalcluster.Name {
	return func(cluster logicalcluster.Name, gr schema.GroupResource) logicalcluster.Name {
		// Every admitted request asks: no sorting, as no two bindings of a
		// cluster bind the same resource (NamingConflicts).
		objs, _ := bindings.List(cluster, "")
		for _, o := range objs {
			b, ok := o.(*apisv1alpha2.APIBinding)
			if !ok {
				continue
			}
			for _, br := range b.Status.BoundResources {
				if br.Group == gr.Group && br.Resource == gr.Resource && b.Status.APIExportClusterName != "" {
					return logicalcluster.Name(b.Status.APIExportClusterName)
				}
			}
		}
		return cluster
	}
}

// resolve returns what br of binding b serves, or false when its schema is
// unknown.
func (x *Index) resolve(b *apisv1alpha2.APIBinding, br apisv1alpha2.BoundAPIResource) (apiextensions.BoundResource, bool) {
	crd := x.crdFor(logicalcluster.Name(b.Status.APIExportClusterName), br.Schema)
	if crd == nil {
		return apiextensions.BoundResource{}, false
	}
	// A virtual resource has no storage versions, as in kcp.
	virtual := len(br.StorageVersions) == 0
	if virtual {
		crd = x.virtualCRD(crd, br.Schema.IdentityHash)
	}
	return apiextensions.BoundResource{
		CRD:          crd,
		IdentityHash: br.Schema.IdentityHash,
		Terminating:  b.DeletionTimestamp != nil,
		Binding:      b.Name,
		Virtual:      virtual,
	}, true
}

// virtualCRD returns crd marked as serving a virtual resource of the
// export with identity, made once per schema and identity.
func (x *Index) virtualCRD(crd *apiextensionsv1.CustomResourceDefinition, identity string) *apiextensionsv1.CustomResourceDefinition {
	key := schemaKey(string(crd.UID), identity)
	x.mu.RLock()
	v := x.virtual[key]
	x.mu.RUnlock()
	if v != nil {
		return v
	}
	v = crd.DeepCopy()
	v.Annotations[apiextensions.SchemaStorageAnnotation] = apiextensions.VirtualStoragePrefix + identity
	x.mu.Lock()
	defer x.mu.Unlock()
	if existing := x.virtual[key]; existing != nil {
		return existing
	}
	x.virtual[key] = v
	return v
}

// crdFor returns the CRD of a bound schema, converting it on first use.
func (x *Index) crdFor(cluster logicalcluster.Name, ref apisv1alpha2.BoundAPIResourceSchema) *apiextensionsv1.CustomResourceDefinition {
	uid := types.UID(ref.UID)
	x.mu.RLock()
	crd := x.crds[uid]
	x.mu.RUnlock()
	if crd != nil {
		return crd
	}
	obj, exists, err := wildcardinformer.First(cluster, "", ref.Name, x.schemas...)
	if err != nil || !exists {
		return nil
	}
	schema := obj.(*apisv1alpha1.APIResourceSchema)
	if schema.UID != uid {
		return nil
	}
	crd, err = CRDFor(cluster, schema)
	if err != nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if existing := x.crds[uid]; existing != nil {
		return existing
	}
	x.crds[uid] = crd
	return crd
}

// CRDFor returns schema, an APIResourceSchema of cluster, as the
// established CRD that serves it: named after the schema's UID as kcp's
// bound CRDs are, with the schema's names accepted.
func CRDFor(cluster logicalcluster.Name, schema *apisv1alpha1.APIResourceSchema) (*apiextensionsv1.CustomResourceDefinition, error) {
	names := *schema.Spec.Names.DeepCopy()
	if names.Singular == "" {
		names.Singular = strings.ToLower(names.Kind)
	}
	if names.ListKind == "" {
		names.ListKind = names.Kind + "List"
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name:            string(schema.UID),
			UID:             schema.UID,
			ResourceVersion: schema.ResourceVersion,
			Generation:      1,
			Annotations: map[string]string{
				apiextensions.BoundCRDAnnotation: "",
				SchemaClusterAnnotation:          string(cluster),
				SchemaNameAnnotation:             schema.Name,
			},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: schema.Spec.Group,
			Names: names,
			Scope: schema.Spec.Scope,
		},
	}
	for _, v := range schema.Spec.Versions {
		cv := apiextensionsv1.CustomResourceDefinitionVersion{
			Name:                     v.Name,
			Served:                   v.Served,
			Storage:                  v.Storage,
			Deprecated:               v.Deprecated,
			DeprecationWarning:       v.DeprecationWarning,
			AdditionalPrinterColumns: v.AdditionalPrinterColumns,
			SelectableFields:         v.SelectableFields,
		}
		if v.Subresources.Status != nil || v.Subresources.Scale != nil {
			cv.Subresources = v.Subresources.DeepCopy()
		}
		if len(v.Schema.Raw) > 0 {
			var props apiextensionsv1.JSONSchemaProps
			if err := json.Unmarshal(v.Schema.Raw, &props); err != nil {
				return nil, fmt.Errorf("schema of version %s: %w", v.Name, err)
			}
			cv.Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &props}
		}
		if v.Storage {
			crd.Status.StoredVersions = []string{v.Name}
		}
		crd.Spec.Versions = append(crd.Spec.Versions, cv)
	}
	if c := schema.Spec.Conversion; c != nil && c.Strategy == apisv1alpha1.WebhookConverter && c.Webhook != nil && c.Webhook.ClientConfig != nil {
		url := c.Webhook.ClientConfig.URL
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: c.Webhook.ClientConfig.CABundle},
				ConversionReviewVersions: c.Webhook.ConversionReviewVersions,
			},
		}
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	crd.Status.AcceptedNames = names
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found"},
		{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"},
	}
	return crd, nil
}
