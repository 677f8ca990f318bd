// Package logicalcluster keeps LogicalCluster objects in the system's hands:
// only system:masters and system:kcp:logical-cluster-admin may change them.
package logicalcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/authorization"
)

// Plugin refuses writes to LogicalClusters by everyone else.
type Plugin struct{ *admission.Handler }

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete)}
}

// Validate refuses writes by unprivileged users.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != corev1alpha1.Resource("logicalclusters") {
		return nil
	}
	for _, g := range a.GetUserInfo().GetGroups() {
		if g == user.SystemPrivilegedGroup || g == authorization.LogicalClusterAdminGroup {
			return nil
		}
	}
	return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(),
		fmt.Errorf("LogicalClusters are managed by the system; only system:masters and %s may change them", authorization.LogicalClusterAdminGroup))
}
