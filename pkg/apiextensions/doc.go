// Package apiextensions serves CustomResourceDefinitions and their custom
// resources per logical cluster.
//
// The upstream apiextensions-apiserver keeps one global set of CRDs. Here a
// CRD lives in one logical cluster and serves its resource only there; two
// clusters may define the same group and resource with different schemas.
// One wildcard informer holds the CRDs of all clusters; the handler looks up
// (cluster, resource.group) per request and serves it with a customresource
// storage and request scopes that are built on first use and released when
// the CRD changes or goes away. Discovery and OpenAPI documents of a cluster
// are the built-in ones plus that cluster's CRDs. A single cluster-aware
// controller sets the CRD conditions (NamesAccepted, Established,
// Terminating) and deletes the instances of a deleted CRD.
package apiextensions
