// Package permissionclaims labels the objects permission claims reach, as
// kcp's apis.kcp.io/PermissionClaims plugin does: on every create and
// update of an object in a workspace, it sets a claim label
// (claimed.internal.apis.kcp.io/<export>) for each APIBinding there that
// accepted a claim of the object's resource whose selector selects the
// object, and removes claim labels nothing backs any more. Nobody else
// sets them: validation refuses claim labels that differ from these.
package permissionclaims

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
)

// Plugin sets and checks the claim labels of created and updated objects.
type Plugin struct {
	*admission.Handler
	// bindings returns the APIBindings of a logical cluster.
	bindings func(logicalcluster.Name) []*apisv1alpha2.APIBinding
}

var (
	_ admission.MutationInterface   = &Plugin{}
	_ admission.ValidationInterface = &Plugin{}
)

// New returns the plugin; bindings lists a cluster's APIBindings.
func New(bindings func(logicalcluster.Name) []*apisv1alpha2.APIBinding) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), bindings: bindings}
}

// want returns the claim labels of the request's object and its labels, or
// ok false when the request is not about an object of a workspace.
func (p *Plugin) want(ctx context.Context, a admission.Attributes) (metaObject, map[string]string, bool) {
	if a.GetSubresource() != "" || a.GetObject() == nil {
		return nil, nil, false
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return nil, nil, false
	}
	obj, err := meta.Accessor(a.GetObject())
	if err != nil {
		return nil, nil, false
	}
	return obj, permissionclaim.LabelsFor(p.bindings(cluster), a.GetResource().GroupResource(), obj.GetLabels()), true
}

type metaObject interface {
	GetLabels() map[string]string
	SetLabels(map[string]string)
}

// Admit sets the object's claim labels to those its workspace's accepted
// claims give it.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	obj, want, ok := p.want(ctx, a)
	if !ok {
		return nil
	}
	if labels, changed := permissionclaim.Apply(obj.GetLabels(), want); changed {
		obj.SetLabels(labels)
	}
	return nil
}

// Validate refuses claim labels that a later mutating plugin (a webhook,
// a policy) changed.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	obj, want, ok := p.want(ctx, a)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	labels := obj.GetLabels()
	path := field.NewPath("metadata", "labels")
	for k, v := range want {
		if labels[k] != v {
			errs = append(errs, field.Invalid(path.Key(k), labels[k], fmt.Sprintf("must be %q", v)))
		}
	}
	for k := range labels {
		if _, expected := want[k]; permissionclaim.IsLabel(k) && !expected {
			errs = append(errs, field.Forbidden(path.Key(k), "must not be set"))
		}
	}
	if len(errs) > 0 {
		return admission.NewForbidden(a, errs.ToAggregate())
	}
	return nil
}
