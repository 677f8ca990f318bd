// Package apiextensions serves CustomResourceDefinitions and their custom
// resources per logical cluster.
//
// The upstream apiextensions-apiserver keeps one global set of CRDs. Here a
// CRD lives in one logical cluster and serves its resource only there; two
// clusters may define the same group and resource with different schemas.
// One wildcard informer holds the CRDs of all clusters (NewInformer; the
// shard shares it with its garbage collector and quota controller); the
// handler looks up (cluster, resource.group) per request and serves it with
// a customresource storage and request scopes that are built on first use
// and released when the CRD changes or goes away, or after it served
// nothing for five minutes. What derives from the spec alone (schemas,
// validators, CEL programs, the apply type converter) is shared by the
// CRDs of equal spec in all clusters; a CRD's storage reads one cluster's
// keys from etcd and starts its watch cache with its first watch. Builds of
// different CRDs run in parallel and hold no lock; tear-downs and builds in
// flight belong to the server, which joins them at shutdown before storage
// stops. Discovery and OpenAPI documents of a cluster
// are the built-in ones plus that cluster's CRDs. A single cluster-aware
// controller sets the CRD conditions (NamesAccepted, Established,
// Terminating) and deletes the instances of a deleted CRD.
//
// Across clusters (/clusters/*) a custom resource has no one schema or set
// of versions, so wildcard lists and watches serve object metadata only,
// as in kcp, and refuse full objects with 406; they include the instances
// of bound resources of that group and resource, of every identity. CRDs may not take the APIs
// the shard serves itself, kcp's groups or the bound-CRD annotation; they
// may define the Kubernetes kinds the shard does not serve (apps, batch,
// core group resources named <plural>.core, served below /api). Those
// kinds, as CRDs or bound, take strategic merge patches as the built-in
// ones do.
package apiextensions
