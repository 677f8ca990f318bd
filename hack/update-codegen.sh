#!/usr/bin/env bash
# Regenerates the generated code of pkg/apis: deepcopy, defaulters, OpenAPI
# definitions and OpenAPI model names. The generators are built from the Go
# module proxy at the versions go.mod pins (k8s.io/code-generator follows
# k8s.io/apimachinery, openapi-gen follows k8s.io/kube-openapi) and cached
# outside the work tree. Running it twice produces no diff.
#
# Environment:
#   UPDATE_API_KNOWN_VIOLATIONS=true  accept the current API rule violations
#                                     into pkg/apis/generated/openapi/api-rule-violations.list
#   CODEGEN_BIN                       where to cache the generator binaries

set -o errexit
set -o nounset
set -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

MODULE="$(go list -m)"
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"
OPENAPI_DIR="pkg/apis/generated/openapi"
KNOWN_VIOLATIONS="${OPENAPI_DIR}/api-rule-violations.list"

# module_version prints the version go.mod resolves a module to, honouring
# replace directives.
module_version() {
	go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$1"
}

CODEGEN_VERSION="$(module_version k8s.io/apimachinery)"
OPENAPI_VERSION="$(module_version k8s.io/kube-openapi)"
CODEGEN_BIN="${CODEGEN_BIN:-${XDG_CACHE_HOME:-${HOME}/.cache}/shardplane-codegen/${CODEGEN_VERSION}-${OPENAPI_VERSION}}"

install_tool() {
	local pkg="$1" version="$2"
	if [[ ! -x "${CODEGEN_BIN}/$(basename "${pkg}")" ]]; then
		echo "installing ${pkg}@${version}"
		GOBIN="${CODEGEN_BIN}" GOFLAGS= go install "${pkg}@${version}"
	fi
}
mkdir -p "${CODEGEN_BIN}"
install_tool k8s.io/code-generator/cmd/deepcopy-gen "${CODEGEN_VERSION}"
install_tool k8s.io/code-generator/cmd/defaulter-gen "${CODEGEN_VERSION}"
install_tool k8s.io/kube-openapi/cmd/openapi-gen "${OPENAPI_VERSION}"

# packages_with prints, sorted, the Go packages under pkg/apis whose doc.go
# carries the given generator tag.
packages_with() {
	grep -rl --include=doc.go -e "^// +$1" pkg/apis | xargs -r -n1 dirname | LC_ALL=C sort -u | sed "s|^|${MODULE}/|"
}
mapfile -t DEEPCOPY_PKGS < <(packages_with 'k8s:deepcopy-gen=package')
mapfile -t DEFAULTER_PKGS < <(packages_with 'k8s:defaulter-gen=')
mapfile -t OPENAPI_PKGS < <(packages_with 'k8s:openapi-gen=true')

# Remove what a previous run generated, so that nothing stale survives.
find pkg/apis -type f \( -name zz_generated.deepcopy.go -o -name zz_generated.defaults.go \
	-o -name zz_generated.model_name.go -o -name zz_generated.openapi.go \) -delete

echo "deepcopy-gen: ${DEEPCOPY_PKGS[*]}"
"${CODEGEN_BIN}/deepcopy-gen" \
	--go-header-file "${BOILERPLATE}" \
	--output-file zz_generated.deepcopy.go \
	"${DEEPCOPY_PKGS[@]}"

echo "defaulter-gen: ${DEFAULTER_PKGS[*]}"
"${CODEGEN_BIN}/defaulter-gen" \
	--go-header-file "${BOILERPLATE}" \
	--output-file zz_generated.defaults.go \
	"${DEFAULTER_PKGS[@]}"

# The apimachinery packages (and apiextensions/v1, whose CRD shapes
# APIResourceSchema reuses) are inputs so that openapi-gen resolves the types
# our types embed (ObjectMeta, Quantity, ...) by their model names; as
# read-only packages they get no files of ours written into them.
APIMACHINERY_PKGS=(
	k8s.io/apimachinery/pkg/apis/meta/v1
	k8s.io/apimachinery/pkg/apis/meta/v1beta1
	k8s.io/apimachinery/pkg/runtime
	k8s.io/apimachinery/pkg/version
	k8s.io/apimachinery/pkg/api/resource
	k8s.io/apimachinery/pkg/util/intstr
	k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1
)
# The Kubernetes groups a shard serves (pkg/shard/scheme.go) are inputs too,
# so that the shard links their definitions only, not those of every
# Kubernetes API that k8s.io/kubernetes/pkg/generated/openapi holds.
KUBE_API_PKGS=(
	k8s.io/api/admissionregistration/v1
	k8s.io/api/authentication/v1
	k8s.io/api/authorization/v1
	k8s.io/api/autoscaling/v1
	k8s.io/api/certificates/v1
	k8s.io/api/coordination/v1
	k8s.io/api/core/v1
	k8s.io/api/events/v1
	k8s.io/api/flowcontrol/v1
	k8s.io/api/rbac/v1
)
APIMACHINERY_PKGS+=("${KUBE_API_PKGS[@]}")
READONLY_ARGS=()
for pkg in "${APIMACHINERY_PKGS[@]}"; do
	READONLY_ARGS+=(--readonly-pkg "${pkg}")
done

REPORT="$(mktemp)"
trap 'rm -f "${REPORT}"' EXIT
echo "openapi-gen: ${OPENAPI_PKGS[*]}"
"${CODEGEN_BIN}/openapi-gen" \
	--go-header-file "${BOILERPLATE}" \
	--output-dir "${OPENAPI_DIR}" \
	--output-pkg "${MODULE}/${OPENAPI_DIR}" \
	--output-file zz_generated.openapi.go \
	--output-model-name-file zz_generated.model_name.go \
	--report-filename "${REPORT}" \
	"${READONLY_ARGS[@]}" \
	"${APIMACHINERY_PKGS[@]}" \
	"${OPENAPI_PKGS[@]}"

# Only our own packages' violations matter; apimachinery's are upstream's.
grep -e "${MODULE}/" "${REPORT}" > "${REPORT}.ours" || true
mv "${REPORT}.ours" "${REPORT}"
if [[ "${UPDATE_API_KNOWN_VIOLATIONS:-}" == "true" ]]; then
	cp "${REPORT}" "${KNOWN_VIOLATIONS}"
fi
touch "${KNOWN_VIOLATIONS}"
if ! diff -u "${KNOWN_VIOLATIONS}" "${REPORT}"; then
	echo "API rule violations differ from ${KNOWN_VIOLATIONS}: fix the types, or rerun with UPDATE_API_KNOWN_VIOLATIONS=true to accept them" >&2
	exit 1
fi
