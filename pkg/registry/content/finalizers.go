package content

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// clearFinalizers empties spec.finalizers of an internal Namespace.
func clearFinalizers(obj runtime.Object) error {
	ns, ok := obj.(*api.Namespace)
	if !ok {
		return fmt.Errorf("expected an internal Namespace, got %T", obj)
	}
	ns.Spec.Finalizers = nil
	return nil
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }
