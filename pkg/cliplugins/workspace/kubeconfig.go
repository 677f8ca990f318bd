package workspace

import (
	"errors"
	"fmt"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Context and cluster names the plugin keeps in the kubeconfig, as kcp's
// plugin does, so that either plugin can continue where the other left off.
const (
	CurrentContextName  = "workspace.kcp.io/current"
	PreviousContextName = "workspace.kcp.io/previous"
)

// errNoPrevious is returned by `kubectl ws -` without a previous workspace.
var errNoPrevious = errors.New("no previous workspace found in kubeconfig")

// EnterWorkspace returns a copy of config whose current context,
// workspace.kcp.io/current, points at server with the user and namespace of
// the context named from, and whose workspace.kcp.io/previous context is the
// one the user came from. Other contexts and clusters are left as they are.
func EnterWorkspace(config *clientcmdapi.Config, from, server string) (*clientcmdapi.Config, error) {
	fromContext, ok := config.Contexts[from]
	if !ok {
		return nil, fmt.Errorf("current context %q not found in kubeconfig", from)
	}
	fromCluster, ok := config.Clusters[fromContext.Cluster]
	if !ok {
		return nil, fmt.Errorf("cluster %q of context %q not found in kubeconfig", fromContext.Cluster, from)
	}
	out := config.DeepCopy()

	cluster := fromCluster.DeepCopy()
	cluster.Server = server
	out.Clusters[CurrentContextName] = cluster
	context := fromContext.DeepCopy()
	context.Cluster = CurrentContextName
	out.Contexts[CurrentContextName] = context

	// The context we came from becomes the previous one. When it used the
	// plugin's own cluster entry, which is about to be overwritten, that
	// entry moves along as the previous cluster.
	previous := fromContext.DeepCopy()
	if fromContext.Cluster == CurrentContextName {
		previous.Cluster = PreviousContextName
		out.Clusters[PreviousContextName] = fromCluster.DeepCopy()
	}
	out.Contexts[PreviousContextName] = previous
	out.CurrentContext = CurrentContextName
	return out, nil
}

// SwapWithPrevious returns a copy of config in which the previous workspace
// is current and the context named from is previous.
func SwapWithPrevious(config *clientcmdapi.Config, from string) (*clientcmdapi.Config, error) {
	fromContext, ok := config.Contexts[from]
	if !ok {
		return nil, fmt.Errorf("current context %q not found in kubeconfig", from)
	}
	prevContext, ok := config.Contexts[PreviousContextName]
	if !ok {
		return nil, errNoPrevious
	}
	out := config.DeepCopy()
	current, previous := prevContext.DeepCopy(), fromContext.DeepCopy()
	// The plugin's own cluster entries swap along with the contexts.
	if fromContext.Cluster == CurrentContextName {
		c, ok := config.Clusters[CurrentContextName]
		if !ok {
			return nil, fmt.Errorf("cluster %q not found in kubeconfig", CurrentContextName)
		}
		previous.Cluster = PreviousContextName
		out.Clusters[PreviousContextName] = c.DeepCopy()
	}
	if prevContext.Cluster == PreviousContextName {
		c, ok := config.Clusters[PreviousContextName]
		if !ok {
			return nil, fmt.Errorf("cluster %q not found in kubeconfig", PreviousContextName)
		}
		current.Cluster = CurrentContextName
		out.Clusters[CurrentContextName] = c.DeepCopy()
	}
	out.Contexts[CurrentContextName] = current
	out.Contexts[PreviousContextName] = previous
	out.CurrentContext = CurrentContextName
	return out, nil
}

// ServerOf returns the server URL of a context of config.
func ServerOf(config *clientcmdapi.Config, contextName string) (string, error) {
	c, ok := config.Contexts[contextName]
	if !ok {
		return "", fmt.Errorf("context %q not found in kubeconfig", contextName)
	}
	cl, ok := config.Clusters[c.Cluster]
	if !ok {
		return "", fmt.Errorf("cluster %q of context %q not found in kubeconfig", c.Cluster, contextName)
	}
	return cl.Server, nil
}
