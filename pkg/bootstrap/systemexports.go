package bootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	shardregistry "github.com/shardplane/shardplane/pkg/registry/core/shard"
	logicalclustermigrationregistry "github.com/shardplane/shardplane/pkg/registry/migration/logicalclustermigration"
	partitionregistry "github.com/shardplane/shardplane/pkg/registry/topology/partition"
	partitionsetregistry "github.com/shardplane/shardplane/pkg/registry/topology/partitionset"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// kcp's system exports live in root: tenancy.kcp.io publishes Workspaces
// and WorkspaceTypes, topology.kcp.io Partitions and PartitionSets,
// shards.core.kcp.io publishes Shards, migration.kcp.io
// LogicalClusterMigrations. The shard
// serves these kinds itself in every workspace; the exports, their
// identities and the APIBindings to them are there so that tools written
// for kcp find what they look for: an identity to qualify wildcard
// requests with, and workspaces whose default APIBindings are Bound.
const (
	// TenancyExport is the export of Workspaces and WorkspaceTypes.
	TenancyExport = "tenancy.kcp.io"
	// TopologyExport is the export of Partitions and PartitionSets.
	TopologyExport = "topology.kcp.io"
	// ShardsExport is the export of Shards.
	ShardsExport = "shards.core.kcp.io"
	// MigrationExport is the export of LogicalClusterMigrations. Only root
	// binds it; no RBAC lets anyone but the system's admins bind it
	// elsewhere, as in kcp.
	MigrationExport = "migration.kcp.io"
)

// Resources of the apis.kcp.io group the bootstrap writes.
var (
	apiExportsGVR         = apisv1alpha2.SchemeGroupVersion.WithResource("apiexports")
	apiBindingsGVR        = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")
	apiResourceSchemasGVR = apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas")
)

// systemExport is an APIExport of root for kinds the shard serves itself.
type systemExport struct {
	name      string
	resources []schemaSource
	// maximalPermissionPolicy is kcp's: tenancy.kcp.io has a local one.
	maximalPermissionPolicy bool
}

var kcpCategories = []string{"kcp"}

// systemExports are kcp's exports of its own kinds in root
// (config/root-phase0 in kcp), without those of kinds the shard does not
// have (cache.kcp.io; migration.kcp.io's logicalclusterdumps: the shards
// copy a moving cluster between them by other means).
var systemExports = []systemExport{
	{
		name:                    TenancyExport,
		maximalPermissionPolicy: true,
		resources: []schemaSource{
			{
				group: tenancyv1alpha1.GroupName, version: tenancyv1alpha1.SchemeGroupVersion.Version,
				model: tenancyv1alpha1.Workspace{}.OpenAPIModelName(),
				names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "workspaces", Singular: "workspace", Kind: "Workspace", ListKind: "WorkspaceList", ShortNames: []string{"ws"}, Categories: kcpCategories},
				columns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Type", Type: "string", JSONPath: ".spec.type.name", Description: "Type of the workspace"},
					{Name: "Region", Type: "string", JSONPath: ".metadata.labels['region']", Description: "The region this workspace is in"},
					{Name: "Phase", Type: "string", JSONPath: ".status.phase", Description: "The current phase (e.g. Scheduling, Initializing, Ready, Deleting)"},
					{Name: "URL", Type: "string", JSONPath: ".spec.URL", Description: "URL to access the workspace"},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
			},
			{
				group: tenancyv1alpha1.GroupName, version: tenancyv1alpha1.SchemeGroupVersion.Version,
				model: tenancyv1alpha1.WorkspaceType{}.OpenAPIModelName(),
				names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "workspacetypes", Singular: "workspacetype", Kind: "WorkspaceType", ListKind: "WorkspaceTypeList", Categories: kcpCategories},
				columns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
			},
			{
				group: tenancyv1alpha1.GroupName, version: tenancyv1alpha1.SchemeGroupVersion.Version,
				model: tenancyv1alpha1.WorkspaceAuthenticationConfiguration{}.OpenAPIModelName(),
				names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "workspaceauthenticationconfigurations", Singular: "workspaceauthenticationconfiguration", Kind: "WorkspaceAuthenticationConfiguration", ListKind: "WorkspaceAuthenticationConfigurationList", Categories: kcpCategories},
				columns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
			},
		},
	},
	{
		name: TopologyExport,
		resources: []schemaSource{
			{
				group: topologyv1alpha1.GroupName, version: topologyv1alpha1.SchemeGroupVersion.Version,
				model:   topologyv1alpha1.Partition{}.OpenAPIModelName(),
				names:   apiextensionsv1.CustomResourceDefinitionNames{Plural: "partitions", Singular: "partition", Kind: "Partition", ListKind: "PartitionList", Categories: kcpCategories},
				columns: partitionregistry.TableColumns,
			},
			{
				group: topologyv1alpha1.GroupName, version: topologyv1alpha1.SchemeGroupVersion.Version,
				model:   topologyv1alpha1.PartitionSet{}.OpenAPIModelName(),
				names:   apiextensionsv1.CustomResourceDefinitionNames{Plural: "partitionsets", Singular: "partitionset", Kind: "PartitionSet", ListKind: "PartitionSetList", Categories: kcpCategories},
				columns: partitionsetregistry.TableColumns,
			},
		},
	},
	{
		name: ShardsExport,
		resources: []schemaSource{{
			group: corev1alpha1.GroupName, version: corev1alpha1.SchemeGroupVersion.Version,
			model:   corev1alpha1.Shard{}.OpenAPIModelName(),
			names:   apiextensionsv1.CustomResourceDefinitionNames{Plural: "shards", Singular: "shard", Kind: "Shard", ListKind: "ShardList", Categories: kcpCategories},
			columns: shardregistry.TableColumns,
		}},
	},
	{
		name: MigrationExport,
		resources: []schemaSource{{
			group: migrationv1alpha1.GroupName, version: migrationv1alpha1.SchemeGroupVersion.Version,
			model:   migrationv1alpha1.LogicalClusterMigration{}.OpenAPIModelName(),
			names:   apiextensionsv1.CustomResourceDefinitionNames{Plural: "logicalclustermigrations", Singular: "logicalclustermigration", Kind: "LogicalClusterMigration", ListKind: "LogicalClusterMigrationList", Categories: kcpCategories},
			columns: logicalclustermigrationregistry.TableColumns,
		}},
	},
}

// SystemExportIdentity returns a lookup of the identity of the system
// export that publishes a group and resource the shard serves itself, read
// from the first of exports (APIExport informers that hold root's exports:
// this shard's, or those read from the root shard) that has root's export:
// false when no system export publishes the resource or the export has no
// identity yet.
func SystemExportIdentity(exports ...*wildcardinformer.Informer) func(group, resource string) (string, bool) {
	return func(group, resource string) (string, bool) {
		for _, e := range systemExports {
			for _, r := range e.resources {
				if r.group != group || r.names.Plural != resource {
					continue
				}
				for _, inf := range exports {
					obj, exists, err := inf.Get(logicalcluster.Root, "", e.name)
					if err == nil && exists {
						hash := obj.(*apisv1alpha2.APIExport).Status.IdentityHash
						return hash, hash != ""
					}
				}
				return "", false
			}
		}
		return "", false
	}
}

// Identity is one entry of --root-identities-file: the identity key of a
// root APIExport.
type Identity struct {
	// Export is the name of the APIExport in root.
	Export string `json:"export"`
	// Identity is the key; the export's identity hash is its hex SHA-256.
	Identity string `json:"identity"`
}

// ParseIdentities parses kcp's --root-identities-file:
// {identities: [{export: <name>, identity: <key>}]}.
func ParseIdentities(data []byte) ([]Identity, error) {
	var file struct {
		Identities []Identity `json:"identities"`
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		return nil, fmt.Errorf("parse root identities: %w", err)
	}
	seen := sets.New[string]()
	for i, id := range file.Identities {
		if msgs := validation.IsDNS1123Subdomain(id.Export); len(msgs) > 0 {
			return nil, fmt.Errorf("identities[%d].export %q: %v", i, id.Export, msgs)
		}
		if id.Identity == "" {
			return nil, fmt.Errorf("identities[%d].identity of export %s is empty", i, id.Export)
		}
		if seen.Has(id.Export) {
			return nil, fmt.Errorf("identities[%d]: export %s is listed twice", i, id.Export)
		}
		seen.Insert(id.Export)
	}
	return file.Identities, nil
}

// createOnlyAnnotation marks bootstrap objects that are never updated, as
// in kcp: an identity, once created, is the export's for good.
const createOnlyAnnotation = "bootstrap.kcp.io/create-only"

// seedIdentities creates the identity secret of each export in root's
// kcp-system namespace unless it exists, before the exports are created:
// the APIExport controller takes an existing secret as the identity.
func seedIdentities(ctx context.Context, c kubernetes.Interface, identities []Identity) error {
	if len(identities) == 0 {
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: apisv1alpha2.DefaultIdentitySecretNamespace}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", ns.Name, err)
	}
	for _, id := range identities {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: apisv1alpha2.DefaultIdentitySecretNamespace, Name: id.Export,
				Annotations: map[string]string{createOnlyAnnotation: "true"},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{apisv1alpha1.SecretKeyAPIExportIdentity: []byte(id.Identity)},
		}
		_, err := c.CoreV1().Secrets(secret.Namespace).Create(ctx, secret, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("identity secret of APIExport %s: %w", id.Export, err)
			}
			continue
		}
		existing, err := c.CoreV1().Secrets(secret.Namespace).Get(ctx, secret.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("identity secret of APIExport %s: %w", id.Export, err)
		}
		if string(existing.Data[apisv1alpha1.SecretKeyAPIExportIdentity]) != id.Identity {
			klog.FromContext(ctx).Info("The identity of the APIExport is set already and never changes; the one in --root-identities-file is ignored",
				"apiExport", logicalcluster.Root.Path().Join(id.Export).String(), "secret", secret.Namespace+"/"+secret.Name)
		}
	}
	return nil
}

// ensureSystemExports creates the schemas and exports of the system
// exports in root, and updates an export whose resources or policy differ.
func ensureSystemExports(ctx context.Context, kcp *kcpclient.Client) error {
	conv := newSchemaConverter()
	for _, e := range systemExports {
		export := &apisv1alpha2.APIExport{
			TypeMeta: metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
			ObjectMeta: metav1.ObjectMeta{Name: e.name, Annotations: map[string]string{
				logicalcluster.PathAnnotationKey: string(logicalcluster.Root),
			}},
		}
		if e.maximalPermissionPolicy {
			export.Spec.MaximalPermissionPolicy = &apisv1alpha2.MaximalPermissionPolicy{Local: &apisv1alpha2.LocalAPIExportPolicy{}}
		}
		for _, src := range e.resources {
			schema, err := conv.apiResourceSchema(src)
			if err != nil {
				return err
			}
			// Schemas are immutable and named after their content: one that
			// exists is this one.
			err = kcp.Create(ctx, logicalcluster.Root, apiResourceSchemasGVR, schema, &apisv1alpha1.APIResourceSchema{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("APIResourceSchema %s: %w", schema.Name, err)
			}
			export.Spec.Resources = append(export.Spec.Resources, apisv1alpha2.ResourceSchema{
				Name: src.names.Plural, Group: src.group, Schema: schema.Name,
				Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}},
			})
		}
		existing := &apisv1alpha2.APIExport{}
		err := kcp.Get(ctx, logicalcluster.Root, apiExportsGVR, e.name, existing)
		switch {
		case apierrors.IsNotFound(err):
			err = kcp.Create(ctx, logicalcluster.Root, apiExportsGVR, export, existing)
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		case err == nil && (!apiequality.Semantic.DeepEqual(existing.Spec.Resources, export.Spec.Resources) ||
			!apiequality.Semantic.DeepEqual(existing.Spec.MaximalPermissionPolicy, export.Spec.MaximalPermissionPolicy)):
			// The identity and what else was set stays.
			existing.Spec.Resources = export.Spec.Resources
			existing.Spec.MaximalPermissionPolicy = export.Spec.MaximalPermissionPolicy
			existing.APIVersion, existing.Kind = export.APIVersion, export.Kind
			err = kcp.Update(ctx, logicalcluster.Root, apiExportsGVR, e.name, existing, &apisv1alpha2.APIExport{})
		}
		if err != nil {
			return fmt.Errorf("APIExport %s: %w", e.name, err)
		}
	}
	return nil
}

// bindRootAPIs binds root to the system exports, as kcp does: each
// binding is named after its export.
func bindRootAPIs(ctx context.Context, kcp *kcpclient.Client) error {
	for _, e := range systemExports {
		b := &apisv1alpha2.APIBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: e.name},
			Spec: apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{
				Export: &apisv1alpha2.ExportBindingReference{Path: string(logicalcluster.Root), Name: e.name},
			}},
		}
		err := kcp.Create(ctx, logicalcluster.Root, apiBindingsGVR, b, &apisv1alpha2.APIBinding{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("APIBinding %s in root: %w", e.name, err)
		}
	}
	return nil
}

// defaultSystemBindings are the default APIBindings of kcp's universal
// type, which organization and team extend.
var defaultSystemBindings = []tenancyv1alpha1.APIExportReference{
	{Path: string(logicalcluster.Root), Export: TenancyExport},
	{Path: string(logicalcluster.Root), Export: TopologyExport},
}

// Root RBAC of the tenancy export.
const (
	// TenancyBindClusterRole lets users bind root:tenancy.kcp.io.
	TenancyBindClusterRole = "system:kcp:apiexport:tenancy:bind"
	// TenancyMaximalPermissionPolicyClusterRole is the maximal permission
	// policy of root:tenancy.kcp.io.
	TenancyMaximalPermissionPolicyClusterRole = "system:kcp:apiexport:tenancy:maximal-permission-policy"
	// TopologyBindClusterRole lets users bind root:topology.kcp.io.
	TopologyBindClusterRole = "system:kcp:apiexport:topology:bind"
)

// systemExportsRBAC lets every authenticated user bind the tenancy and
// topology exports and use what the tenancy export binds. The policy does not hold back the status
// subresources as kcp's does: the shard refuses status writes of its kinds
// to everyone but the system in admission, saying so.
func systemExportsRBAC(ctx context.Context, c kubernetes.Interface) error {
	authenticated := user.AllAuthenticated
	roles := []struct {
		role    *rbacv1.ClusterRole
		binding string
		group   string
	}{
		{
			role: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: TenancyBindClusterRole}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{apisv1alpha2.GroupName}, Resources: []string{"apiexports"}, ResourceNames: []string{TenancyExport}, Verbs: []string{"bind"},
			}}},
			binding: "system:kcp:authenticated:apiexport:tenancy:bind",
			group:   authenticated,
		},
		{
			role: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: TopologyBindClusterRole}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{apisv1alpha2.GroupName}, Resources: []string{"apiexports"}, ResourceNames: []string{TopologyExport}, Verbs: []string{"bind"},
			}}},
			binding: "system:kcp:authenticated:apiexport:topology:bind",
			group:   authenticated,
		},
		{
			role: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: TenancyMaximalPermissionPolicyClusterRole}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{tenancyv1alpha1.GroupName}, Verbs: []string{rbacv1.VerbAll},
				Resources: []string{"workspaces", "workspaces/status", "workspacetypes", "workspacetypes/status", "workspaceauthenticationconfigurations"},
			}}},
			binding: "system:kcp:authenticated:apiexport:tenancy:maximal-permission-policy",
			group:   apisv1alpha1.MaximalPermissionPolicyRBACUserGroupPrefix + authenticated,
		},
	}
	for _, r := range roles {
		if err := ensureClusterRole(ctx, c, r.role); err != nil {
			return err
		}
		if err := ensureClusterRoleBinding(ctx, c, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: r.binding},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: r.group}},
		}); err != nil {
			return err
		}
	}
	return nil
}
