// Package version reports the project's version: the Kubernetes release it
// builds on, marked +shardplane, wherever a binary was built without version
// ldflags, so that /version is a valid semantic version for kubectl and
// client libraries.
package version

import (
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	basecompatibility "k8s.io/component-base/compatibility"
)

// Project wraps the effective version of a server of the project.
func Project(v basecompatibility.EffectiveVersion) basecompatibility.EffectiveVersion {
	return projectVersion{v}
}

// projectVersion reports the Kubernetes release the project builds on when
// the binary was built without version ldflags, so /version is a valid
// semantic version for kubectl and client libraries.
type projectVersion struct {
	basecompatibility.EffectiveVersion
}

func (v projectVersion) Info() *apimachineryversion.Info {
	info := v.EffectiveVersion.Info()
	if info == nil || !strings.HasPrefix(info.GitVersion, "v0.0.0") {
		return info
	}
	kube := "v" + v.BinaryVersion().String()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/kubernetes" {
				kube = d.Version
			}
		}
	}
	info.GitVersion = kube + "+shardplane"
	return info
}
