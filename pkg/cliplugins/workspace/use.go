package workspace

import (
	"context"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// cdNote is printed after a bare `kubectl ws`, as kcp's plugin does.
const cdNote = "Note: 'kubectl ws' now matches 'cd' semantics: go to home workspace. 'kubectl ws -' to go back. 'kubectl ws .' to print current workspace."

// UseOptions switch the current workspace (`kubectl ws use <target>`).
type UseOptions struct {
	*Options
	// Short prints only the workspace path.
	Short bool
}

// Use switches to the workspace arg names, or prints the current one for
// ".". An empty arg goes home.
func (o *UseOptions) Use(ctx context.Context, arg string) error {
	if err := o.Complete(); err != nil {
		return err
	}
	name, target, note := Classify(arg, o.homeDir())
	if note != "" {
		fmt.Fprintln(o.ErrOut, note)
	}

	switch target {
	case TargetCurrent:
		cfg, err := o.restConfig()
		if err != nil {
			return err
		}
		return printCurrent(o.Out, cfg.Host, o.Short, nil)
	case TargetPrevious:
		return o.usePrevious()
	}

	cfg, cur, err := o.current()
	if err != nil {
		return err
	}
	client, err := NewClient(cfg, cur.Base)
	if err != nil {
		return err
	}

	var p logicalcluster.Path
	switch target {
	case TargetRoot:
		if !cur.IsWorkspace() {
			return fmt.Errorf("current URL %q does not point to a workspace", cfg.Host)
		}
		p = TopLevel(cur.Path)
	case TargetHome:
		home, err := homePath(ctx, client)
		if err != nil {
			return err
		}
		if p, err = Resolve("", ":"+home.String()+strings.TrimPrefix(name, "~")); err != nil {
			return err
		}
	default:
		if p, err = Resolve(cur.Path, name); err != nil {
			return err
		}
	}

	typ, err := checkWorkspace(ctx, client, p)
	if err != nil {
		return err
	}
	if err := o.enter(cur.URL(p), typ); err != nil {
		return err
	}
	if arg == "" {
		fmt.Fprintln(o.ErrOut, cdNote)
	}
	return nil
}

// enter makes server the current workspace in the kubeconfig and prints it.
func (o *UseOptions) enter(server string, typ *tenancyv1alpha1.WorkspaceTypeReference) error {
	next, err := EnterWorkspace(o.startingConfig, o.contextName(), server)
	if err != nil {
		return err
	}
	if err := o.writeConfig(next); err != nil {
		return err
	}
	return printCurrent(o.Out, server, o.Short, typ)
}

// usePrevious swaps the current and the previous workspace.
func (o *UseOptions) usePrevious() error {
	next, err := SwapWithPrevious(o.startingConfig, o.contextName())
	if err != nil {
		return err
	}
	if err := o.writeConfig(next); err != nil {
		return err
	}
	server, err := ServerOf(next, CurrentContextName)
	if err != nil {
		return err
	}
	return printCurrent(o.Out, server, o.Short, nil)
}

// homePath asks root for the caller's home Workspace and returns the path
// of its spec.URL.
func homePath(ctx context.Context, client *Client) (logicalcluster.Path, error) {
	ws, err := client.GetWorkspace(ctx, logicalcluster.Root.Path(), HomeWorkspaceName)
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("this server has no home workspace for you (home workspaces may be disabled): %w", err)
	}
	if err != nil {
		return "", fmt.Errorf("get home workspace: %w", err)
	}
	u, err := ParseServerURL(ws.Spec.URL)
	if err != nil || !u.IsWorkspace() {
		return "", fmt.Errorf("home workspace has no usable URL %q", ws.Spec.URL)
	}
	return u.Path, nil
}

// checkWorkspace tells whether the workspace at p exists and the caller may
// enter it, as kcp's plugin decides: discovery at its URL (403: no access)
// and the Workspace object in its parent (404: it does not exist). It
// returns the workspace's type when the parent shows it.
func checkWorkspace(ctx context.Context, client *Client, p logicalcluster.Path) (*tenancyv1alpha1.WorkspaceTypeReference, error) {
	reach, err := client.Discover(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("check workspace %q: %w", p, err)
	}

	var typ *tenancyv1alpha1.WorkspaceTypeReference
	var ws *tenancyv1alpha1.Workspace
	notFound := false
	if p == logicalcluster.Root.Path() {
		typ = &tenancyv1alpha1.WorkspaceTypeReference{Name: "root"}
	} else if parent, ok := p.Parent(); ok {
		// Not being allowed to read the parent does not stop anyone from
		// entering a workspace; only a definite 404 counts.
		got, err := client.GetWorkspace(ctx, parent, p.Base())
		switch {
		case apierrors.IsNotFound(err):
			notFound = true
		case err == nil:
			ws, typ = got, got.Spec.Type
		}
	}

	switch {
	case reach == Reachable:
		return typ, nil
	case notFound:
		return nil, fmt.Errorf("workspace %q not found", p)
	case reach == Forbidden && ws == nil:
		// Servers answer 403 for paths that do not exist, so as not to leak
		// existence. Where an ancestor is visibly missing, say so.
		if missing, ok := missingAncestor(ctx, client, p); ok {
			return nil, fmt.Errorf("workspace %q not found: %q does not exist", p, missing)
		}
		return nil, fmt.Errorf("access to workspace %q denied", p)
	case reach == Forbidden:
		return nil, fmt.Errorf("access to workspace %q denied", p)
	case ws != nil && ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady:
		return nil, fmt.Errorf("workspace %q is not ready yet (phase %s)", p, ws.Status.Phase)
	case ws != nil:
		return nil, fmt.Errorf("workspace %q exists, but this server does not serve it; use the URL in its spec.URL (%s)", p, ws.Spec.URL)
	}
	return nil, fmt.Errorf("workspace %q not found", p)
}

// missingAncestor looks for the nearest ancestor of p whose Workspace its
// own parent reports as not found. It stops at the first ancestor that is
// visibly there: below it, a 403 is a real denial.
func missingAncestor(ctx context.Context, client *Client, p logicalcluster.Path) (logicalcluster.Path, bool) {
	for a, ok := p.Parent(); ok; a, ok = a.Parent() {
		parent, hasParent := a.Parent()
		if !hasParent {
			return "", false
		}
		_, err := client.GetWorkspace(ctx, parent, a.Base())
		switch {
		case apierrors.IsNotFound(err):
			return a, true
		case err == nil:
			return "", false
		}
	}
	return "", false
}

// typeString spells a workspace type reference as kcp's plugin does:
// path:name, or name alone without a path.
func typeString(t *tenancyv1alpha1.WorkspaceTypeReference) string {
	if t.Path == "" {
		return string(t.Name)
	}
	return t.Path + ":" + string(t.Name)
}

// printCurrent prints the workspace of server in kcp's words:
// "Current workspace is 'root:org' (type root:organization)." With short,
// only the path.
func printCurrent(out io.Writer, server string, short bool, typ *tenancyv1alpha1.WorkspaceTypeReference) error {
	u, err := ParseServerURL(server)
	if err != nil || !u.IsWorkspace() {
		if short {
			return nil
		}
		_, err = fmt.Fprintf(out, "Current workspace is the URL %q.\n", server)
		return err
	}
	if short {
		_, err = fmt.Fprintln(out, u.Path)
		return err
	}
	msg := fmt.Sprintf("Current workspace is '%s'", u.Path)
	if typ != nil {
		msg += fmt.Sprintf(" (type %s)", typeString(typ))
	}
	_, err = fmt.Fprintln(out, msg+".")
	return err
}
