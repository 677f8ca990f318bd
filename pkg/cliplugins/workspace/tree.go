package workspace

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// TreeOptions print the workspaces below the current one (`kubectl ws tree`).
type TreeOptions struct {
	*Options
	// Full prints full paths instead of workspace names.
	Full bool
}

// TreeNode is a workspace and the workspaces in it.
type TreeNode struct {
	Name     string
	Children []*TreeNode
}

// Tree prints the tree of workspaces below the current one, in the layout
// kcp's plugin prints:
//
//	.
//	└── root
//	    ├── org
//	    │   └── team
//	    └── other
func (o *TreeOptions) Tree(ctx context.Context) error {
	if err := o.Complete(); err != nil {
		return err
	}
	cfg, cur, err := o.current()
	if err != nil {
		return err
	}
	if !cur.IsWorkspace() {
		return fmt.Errorf("current config context URL %q does not point to workspace", cfg.Host)
	}
	client, err := NewClient(cfg, cur.Base)
	if err != nil {
		return err
	}
	name := cur.Path.String()
	if !o.Full {
		name = cur.Path.Base()
	}
	node := &TreeNode{Name: name}
	if err := o.populate(ctx, client, node, cur.Path); err != nil {
		return err
	}
	_, err = fmt.Fprintln(o.Out, RenderTree([]*TreeNode{node}))
	return err
}

// populate adds the workspaces in the workspace at p to node, recursively.
func (o *TreeOptions) populate(ctx context.Context, client *Client, node *TreeNode, p logicalcluster.Path) error {
	list, err := client.ListWorkspaces(ctx, p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list workspaces in %q: %w", p, err)
	}
	for _, ws := range list.Items {
		// spec.URL carries the canonical path; before the workspace is
		// scheduled it is empty and the path follows from the parent.
		childPath := p.Join(ws.Name)
		if u, err := ParseServerURL(ws.Spec.URL); err == nil && u.IsWorkspace() {
			childPath = u.Path
		}
		name := ws.Name
		if o.Full {
			name = node.Name + ":" + ws.Name
		}
		child := &TreeNode{Name: name}
		node.Children = append(node.Children, child)
		if err := o.populate(ctx, client, child, childPath); err != nil {
			return err
		}
	}
	return nil
}

// RenderTree draws nodes under a "." line with box-drawing branches.
func RenderTree(nodes []*TreeNode) string {
	var b strings.Builder
	b.WriteString(".\n")
	renderBranches(&b, nodes, "")
	return b.String()
}

func renderBranches(b *strings.Builder, nodes []*TreeNode, indent string) {
	for i, n := range nodes {
		branch, next := "├── ", "│   "
		if i == len(nodes)-1 {
			branch, next = "└── ", "    "
		}
		b.WriteString(indent + branch + n.Name + "\n")
		renderBranches(b, n.Children, indent+next)
	}
}
