package apiextensions

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// crdController keeps the status of the CRDs of all logical clusters as
// kube-apiserver's naming, establishing and finalizing controllers do, with
// names checked only against the CRDs of the same cluster.
type crdController struct {
	crds  *crdIndex
	queue workqueue.TypedRateLimitingInterface[string]

	// updateStatus writes a CRD's status (and finalizers) in its cluster.
	updateStatus func(ctx context.Context, cluster logicalcluster.Name, crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error)
	// instances returns the storage of a CRD's custom resources in its cluster.
	instances func(cluster logicalcluster.Name, crd *apiextensionsv1.CustomResourceDefinition) (instanceStorage, error)
}

// instanceStorage lists and deletes the custom resources of one CRD.
type instanceStorage interface {
	rest.Lister
	rest.CollectionDeleter
}

func newCRDController(crds *crdIndex) *crdController {
	return &crdController{
		crds: crds,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "shardplane_crd_status"}),
	}
}

func (c *crdController) OnAdd(obj interface{})       { c.enqueue(obj) }
func (c *crdController) OnUpdate(_, obj interface{}) { c.enqueue(obj) }
func (c *crdController) OnDelete(obj interface{}) {
	crd, ok := crdFromObject(obj)
	if !ok {
		return
	}
	// The deleted CRD frees its names: reconsider the others of its group.
	cluster := clusterOf(crd)
	for _, other := range c.crds.list(cluster) {
		if other.Spec.Group == crd.Spec.Group {
			c.queue.Add(wildcardinformer.Key(cluster, "", other.Name))
		}
	}
}

func (c *crdController) enqueue(obj interface{}) {
	if crd, ok := crdFromObject(obj); ok {
		c.queue.Add(wildcardinformer.Key(clusterOf(crd), "", crd.Name))
	}
}

// run processes the queue with workers until ctx is done.
// It returns once its workers have stopped: they use custom resource
// storage, which stops after them.
func (c *crdController) run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for c.processNext(ctx) {
				}
			}, time.Second)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *crdController) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing CustomResourceDefinition failed", "key", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *crdController) sync(ctx context.Context, key string) error {
	clusterName, name, _ := strings.Cut(key, "|")
	cluster := logicalcluster.Name(clusterName)
	crd := c.crds.get(cluster, name)
	if crd == nil {
		return nil
	}
	if !crd.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, cluster, crd)
	}
	if !equality.Semantic.DeepEqual(crd.Spec.Names, crd.Status.AcceptedNames) {
		return c.acceptNames(ctx, cluster, crd)
	}
	if apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.NamesAccepted) &&
		!apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		return c.establish(ctx, cluster, crd)
	}
	return nil
}

// acceptNames is kube-apiserver's naming controller for one cluster.
func (c *crdController) acceptNames(ctx context.Context, cluster logicalcluster.Name, in *apiextensionsv1.CustomResourceDefinition) error {
	names, namesAccepted, established := c.calculateNames(cluster, in)
	if reflect.DeepEqual(in.Status.AcceptedNames, names) &&
		apiextensionshelpers.IsCRDConditionEquivalent(&namesAccepted, apiextensionshelpers.FindCRDCondition(in, apiextensionsv1.NamesAccepted)) {
		return nil
	}
	crd := in.DeepCopy()
	crd.Status.AcceptedNames = names
	apiextensionshelpers.SetCRDCondition(crd, namesAccepted)
	apiextensionshelpers.SetCRDCondition(crd, established)
	if _, err := c.updateStatus(ctx, cluster, crd); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // an event follows
		}
		return err
	}
	// A released name may unblock another CRD of the group.
	for _, other := range c.crds.list(cluster) {
		if other.Spec.Group == crd.Spec.Group && other.Name != crd.Name {
			c.queue.Add(wildcardinformer.Key(cluster, "", other.Name))
		}
	}
	return nil
}

func (c *crdController) calculateNames(cluster logicalcluster.Name, in *apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition, apiextensionsv1.CustomResourceDefinitionCondition) {
	usedResources, usedKinds := sets.New[string](), sets.New[string]()
	for _, other := range c.crds.list(cluster) {
		if other.Spec.Group != in.Spec.Group || other.Name == in.Name {
			continue
		}
		n := other.Status.AcceptedNames
		usedResources.Insert(n.Plural, n.Singular)
		usedResources.Insert(n.ShortNames...)
		usedKinds.Insert(n.Kind, n.ListKind)
	}
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionUnknown}
	conflict := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}
	requested, accepted := in.Spec.Names, in.Status.AcceptedNames
	names := in.Status.AcceptedNames
	if err := freshOrAccepted(requested.Plural, accepted.Plural, usedResources); err != nil {
		conflict("PluralConflict", err)
	} else {
		names.Plural = requested.Plural
	}
	if err := freshOrAccepted(requested.Singular, accepted.Singular, usedResources); err != nil {
		conflict("SingularConflict", err)
	} else {
		names.Singular = requested.Singular
	}
	if !reflect.DeepEqual(requested.ShortNames, accepted.ShortNames) {
		var errs []error
		existing := sets.New(accepted.ShortNames...)
		for _, s := range requested.ShortNames {
			if existing.Has(s) {
				continue
			}
			if err := freshOrAccepted(s, "", usedResources); err != nil {
				errs = append(errs, err)
			}
		}
		if err := utilerrors.NewAggregate(errs); err != nil {
			conflict("ShortNamesConflict", err)
		} else {
			names.ShortNames = requested.ShortNames
		}
	}
	if err := freshOrAccepted(requested.Kind, accepted.Kind, usedKinds); err != nil {
		conflict("KindConflict", err)
	} else {
		names.Kind = requested.Kind
	}
	if err := freshOrAccepted(requested.ListKind, accepted.ListKind, usedKinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		names.ListKind = requested.ListKind
	}
	names.Categories = requested.Categories
	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found"
	}

	// Established becomes true in a second step, once the handler can see
	// the accepted names.
	established := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted",
	}
	if old := apiextensionshelpers.FindCRDCondition(in, apiextensionsv1.Established); old != nil {
		established = *old
	}
	if established.Status != apiextensionsv1.ConditionTrue && cond.Status == apiextensionsv1.ConditionTrue {
		established = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "Installing", Message: "the initial names have been accepted",
		}
	}
	return names, cond, established
}

func freshOrAccepted(requested, accepted string, used sets.Set[string]) error {
	if requested == accepted || !used.Has(requested) {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}

// establish is kube-apiserver's establishing controller for one cluster.
func (c *crdController) establish(ctx context.Context, cluster logicalcluster.Name, in *apiextensionsv1.CustomResourceDefinition) error {
	crd := in.DeepCopy()
	apiextensionshelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted",
	})
	if _, err := c.updateStatus(ctx, cluster, crd); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// finalize is kube-apiserver's CRD finalizer: it deletes all instances of a
// deleted CRD in its cluster, then releases the CRD.
func (c *crdController) finalize(ctx context.Context, cluster logicalcluster.Name, in *apiextensionsv1.CustomResourceDefinition) error {
	if !apiextensionshelpers.CRDHasFinalizer(in, apiextensionsv1.CustomResourceCleanupFinalizer) {
		return nil
	}
	crd := in.DeepCopy()
	apiextensionshelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress",
	})
	crd, err := c.updateStatus(ctx, cluster, crd)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return err
	}

	if apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		cond, deleteErr := c.deleteInstances(ctx, cluster, crd)
		apiextensionshelpers.SetCRDCondition(crd, cond)
		if deleteErr != nil {
			if _, err := c.updateStatus(ctx, cluster, crd); err != nil {
				utilruntime.HandleErrorWithContext(ctx, err, "Updating CustomResourceDefinition status failed", "cluster", cluster, "crd", crd.Name)
			}
			return deleteErr
		}
	} else {
		apiextensionshelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse, Reason: "NeverEstablished", Message: "resource was never established",
		})
	}
	apiextensionshelpers.CRDRemoveFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer)
	if _, err := c.updateStatus(ctx, cluster, crd); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

func (c *crdController) deleteInstances(ctx context.Context, cluster logicalcluster.Name, crd *apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionCondition, error) {
	failed := func(reason, format string, err error) (apiextensionsv1.CustomResourceDefinitionCondition, error) {
		return apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: fmt.Sprintf(format, err),
		}, err
	}
	storage, err := c.instances(cluster, crd)
	if err != nil {
		return failed("InstanceDeletionFailed", "could not list instances: %v", err)
	}
	ctx = logicalcluster.WithCluster(ctx, cluster)
	if _, err := deleteAll(ctx, cluster, storage); err != nil {
		return failed("InstanceDeletionFailed", "could not issue all deletes: %v", err)
	}
	// Instances with finalizers of their own stay until those are removed.
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := storage.List(ctx, nil)
		if err != nil {
			return false, err
		}
		remaining := len(list.(*unstructured.UnstructuredList).Items)
		if remaining > 0 {
			klog.FromContext(ctx).V(2).Info("Waiting for custom resources to be removed", "cluster", cluster, "crd", crd.Name, "count", remaining)
		}
		return remaining == 0, nil
	})
	if err != nil {
		return failed("InstanceDeletionCheck", "could not confirm zero CustomResources remaining: %v", err)
	}
	return apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse, Reason: "InstanceDeletionCompleted", Message: "removed all instances",
	}, nil
}

// deleteAll deletes the custom resources of storage in cluster, namespace by
// namespace, and returns how many remain: instances with finalizers of their
// own stay until those are removed.
func deleteAll(ctx context.Context, cluster logicalcluster.Name, storage instanceStorage) (int, error) {
	ctx = logicalcluster.WithCluster(ctx, cluster)
	list, err := storage.List(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("list instances: %w", err)
	}
	items := list.(*unstructured.UnstructuredList).Items
	namespaces := sets.New[string]()
	var errs []error
	for i := range items {
		ns := items[i].GetNamespace()
		if namespaces.Has(ns) {
			continue
		}
		namespaces.Insert(ns)
		if _, err := storage.DeleteCollection(apirequest.WithNamespace(ctx, ns), rest.ValidateAllObjectFunc, nil, nil); err != nil {
			errs = append(errs, err)
		}
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return len(items), err
	}
	if list, err = storage.List(ctx, nil); err != nil {
		return len(items), fmt.Errorf("list instances: %w", err)
	}
	return len(list.(*unstructured.UnstructuredList).Items), nil
}
