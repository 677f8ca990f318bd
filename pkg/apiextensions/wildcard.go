package apiextensions

import (
	"fmt"
	"net/http"
	"strings"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Across logical clusters a custom resource has no one schema, not even one
// set of versions: every cluster defines it with its own CRD or binds it
// from an export. As in kcp, a wildcard list or watch of a custom resource
// therefore returns object metadata only (PartialObjectMetadata), which
// every version of every schema has; full objects are refused. It returns
// the instances of every CRD and every binding of that group and resource
// alike: it reads all of /<group>/<resource>/, custom resources and bound
// instances of every identity (kcp's controllers and garbage collector
// list this way).

// metadataOnlyAccept returns the media ranges of an Accept header that ask
// for PartialObjectMetadata or PartialObjectMetadataList, joined again, or
// "" if there are none.
func metadataOnlyAccept(accept string) string {
	var keep []string
	for _, clause := range strings.Split(accept, ",") {
		for _, m := range mediaTypes(clause) {
			if m.params["g"] == metav1.GroupName && (m.params["v"] == "v1" || m.params["v"] == "v1beta1") &&
				(m.params["as"] == "PartialObjectMetadata" || m.params["as"] == "PartialObjectMetadataList") {
				keep = append(keep, strings.TrimSpace(clause))
			}
		}
	}
	return strings.Join(keep, ",")
}

// errFullObjectsAcrossClusters refuses a wildcard request for full custom
// resources.
func errFullObjectsAcrossClusters(gr schema.GroupResource) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource},
		Message: fmt.Sprintf("%s across all logical clusters are served as metadata only, because each logical cluster defines them with its own CustomResourceDefinition: "+
			"request Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", gr.String()),
	}}
}

// metadataCRD returns the CRD that serves version of crd's resource across
// all clusters: schema-less, without subresources or conversion, so that it
// reads objects written under any schema and in any version.
func metadataCRD(crd *apiextensionsv1.CustomResourceDefinition, version string) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	out := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: *crd.ObjectMeta.DeepCopy(),
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: crd.Spec.Group,
			Names: *crd.Spec.Names.DeepCopy(),
			Scope: crd.Spec.Scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve},
				},
			}},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: *crd.Status.AcceptedNames.DeepCopy()},
	}
	return out
}

// servesAnywhere returns an established CRD of that name in any cluster
// that serves version, or nil.
func servesAnywhere(crds []*apiextensionsv1.CustomResourceDefinition, version string) *apiextensionsv1.CustomResourceDefinition {
	for _, crd := range crds {
		if apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) && servesVersion(&crd.Spec, version) {
			return crd
		}
	}
	return nil
}

// wildcardSource returns the CRD whose names and scope serve version of
// group/resource across all clusters: an established CRD of any cluster
// that serves it, else the schema of any binding that does, as kcp serves a
// wildcard metadata request from any CRD or bound CRD of that name. nil
// when nothing serves it.
func (h *crHandler) wildcardSource(group, resource, version string) *apiextensionsv1.CustomResourceDefinition {
	if crd := servesAnywhere(h.crds.byName(crdName(group, resource)), version); crd != nil {
		return crd
	}
	if h.bound == nil || h.crds.nativeAPIs().serves(group, resource) {
		return nil
	}
	for _, br := range h.bound.ForGroupResource(group, resource) {
		if servesVersion(&br.CRD.Spec, version) {
			return br.CRD
		}
	}
	return nil
}

// metadataConverter reads custom resources of any version of a group as
// the requested version by relabelling them, as the None strategy does, but
// without checking the version against a CRD: objects of other clusters may
// be stored in versions the serving CRD lacks. It serves metadata only.
type metadataConverter struct {
	group         string
	clusterScoped bool
}

func (c metadataConverter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	if label == "metadata.name" || (!c.clusterScoped && label == "metadata.namespace") {
		return label, value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}

func (c metadataConverter) Convert(in, out, _ interface{}) error {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("input type %T is not valid for unstructured conversion", in)
	}
	target, ok := out.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("output type %T is not valid for unstructured conversion", out)
	}
	gv := target.GroupVersionKind().GroupVersion()
	if err := c.check(u.GroupVersionKind().GroupVersion(), gv); err != nil {
		return err
	}
	target.SetUnstructuredContent(runtime.DeepCopyJSON(u.Object))
	target.SetAPIVersion(gv.String())
	return nil
}

func (c metadataConverter) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	from := in.GetObjectKind().GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from})
	if !ok {
		return nil, fmt.Errorf("%v is unstructured and is not suitable for converting to %q", from, target)
	}
	if err := c.check(from.GroupVersion(), to.GroupVersion()); err != nil {
		return nil, err
	}
	switch o := in.DeepCopyObject().(type) {
	case *unstructured.Unstructured:
		o.SetAPIVersion(to.GroupVersion().String())
		return o, nil
	case *unstructured.UnstructuredList:
		o.SetAPIVersion(to.GroupVersion().String())
		for i := range o.Items {
			o.Items[i].SetAPIVersion(to.GroupVersion().String())
		}
		return o, nil
	default:
		return nil, fmt.Errorf("type %T is not valid for unstructured conversion", in)
	}
}

func (c metadataConverter) check(from, to schema.GroupVersion) error {
	if from.Group != c.group || to.Group != c.group {
		return fmt.Errorf("cannot convert %s to %s: not in group %q", from, to, c.group)
	}
	return nil
}
