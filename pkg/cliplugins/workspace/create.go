package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// DefaultReadyTimeout is how long create waits for a new workspace to become
// Ready, as kcp's plugin does.
const DefaultReadyTimeout = time.Minute

// readyPoll is how often create looks at a new workspace's phase.
const readyPoll = 500 * time.Millisecond

// CreateOptions create a workspace in the current one
// (`kubectl create workspace <name>`, `kubectl ws create <name>`).
type CreateOptions struct {
	*Options

	// Type is the workspace type: name (resolved by the server) or
	// path:name.
	Type string
	// Enter switches to the workspace once it is Ready.
	Enter bool
	// IgnoreExisting treats an existing workspace of that name (and type)
	// as success.
	IgnoreExisting bool
	// ReadyTimeout bounds the wait for phase Ready.
	ReadyTimeout time.Duration
	// Short prints only the path when entering.
	Short bool
}

// ParseTypeReference reads --type: "name" or "path:name"; names are
// lower-cased as kcp's plugin does.
func ParseTypeReference(s string) *tenancyv1alpha1.WorkspaceTypeReference {
	if s == "" {
		return nil
	}
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return &tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.WorkspaceTypeName(strings.ToLower(s))}
	}
	return &tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.WorkspaceTypeName(strings.ToLower(s[i+1:])), Path: s[:i]}
}

// Validate checks the flags before anything is sent.
func (o *CreateOptions) Validate(name string) error {
	if name == "" {
		return errors.New("a workspace name is required")
	}
	if o.IgnoreExisting && o.Type != "" {
		root := logicalcluster.Root.String()
		if o.Type != root && !strings.HasPrefix(o.Type, root+":") {
			return errors.New("--ignore-existing must not be used with non-absolute type path")
		}
	}
	return nil
}

// Create creates the workspace name in the current workspace, waits until
// it is Ready and, with Enter, switches to it.
func (o *CreateOptions) Create(ctx context.Context, name string) error {
	if err := o.Validate(name); err != nil {
		return err
	}
	if err := o.Complete(); err != nil {
		return err
	}
	cfg, cur, err := o.current()
	if err != nil {
		return err
	}
	if !cur.IsWorkspace() {
		return fmt.Errorf("current URL %q does not point to a workspace", cfg.Host)
	}
	client, err := NewClient(cfg, cur.Base)
	if err != nil {
		return err
	}

	want := ParseTypeReference(o.Type)
	ws, err := client.CreateWorkspace(ctx, cur.Path, &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Type: want},
	})
	existed := false
	if apierrors.IsAlreadyExists(err) && o.IgnoreExisting {
		existed = true
		ws, err = client.GetWorkspace(ctx, cur.Path, name)
	}
	if err != nil {
		return err
	}

	ref := fmt.Sprintf("Workspace %q", name)
	if ws.Spec.Type != nil {
		ref += fmt.Sprintf(" (type %s)", typeString(ws.Spec.Type))
	}
	ready := ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady
	timeout := o.ReadyTimeout
	switch {
	case existed && want != nil && ws.Spec.Type != nil && typeString(want) != typeString(ws.Spec.Type):
		return fmt.Errorf("workspace %q cannot be created with type %s, it already exists with different type %s", name, typeString(want), typeString(ws.Spec.Type))
	case existed && !ready && timeout > 0:
		fmt.Fprintf(o.Out, "%s already exists. Waiting for it to be ready...\n", ref)
	case existed:
		fmt.Fprintf(o.Out, "%s already exists.\n", ref)
	case !ready && timeout > 0:
		fmt.Fprintf(o.Out, "%s created. Waiting for it to be ready...\n", ref)
	case !ready:
		return fmt.Errorf("%s created but is not ready to use", ref)
	}

	if !ready {
		if ws, err = waitForReady(ctx, client, cur.Path, name, timeout); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "%s is ready to use.\n", ref)

	if !o.Enter {
		return nil
	}
	use := &UseOptions{Options: o.Options, Short: o.Short}
	return use.Use(ctx, ws.Name)
}

// waitForReady polls the workspace until its phase is Ready.
func waitForReady(ctx context.Context, client *Client, parent logicalcluster.Path, name string, timeout time.Duration) (*tenancyv1alpha1.Workspace, error) {
	var ws *tenancyv1alpha1.Workspace
	err := wait.PollUntilContextTimeout(ctx, readyPoll, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := client.GetWorkspace(ctx, parent, name)
		switch {
		case apierrors.IsNotFound(err):
			return false, nil // not visible to this reader yet
		case err != nil:
			return false, err
		}
		ws = got
		return got.Status.Phase == corev1alpha1.LogicalClusterPhaseReady, nil
	})
	switch {
	case err == nil:
		return ws, nil
	case wait.Interrupted(err) && ws != nil:
		return nil, fmt.Errorf("workspace %q is not ready after %s (phase %s)", parent.Join(name), timeout, ws.Status.Phase)
	case wait.Interrupted(err):
		return nil, fmt.Errorf("workspace %q is not ready after %s", parent.Join(name), timeout)
	}
	return nil, fmt.Errorf("wait for workspace %q: %w", parent.Join(name), err)
}
