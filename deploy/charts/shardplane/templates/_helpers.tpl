{{/*
Names, labels and the values every template derives from. Secret names are
the same with and without cert-manager, so that both PKI modes mount the
same volumes.
*/}}

{{- define "shardplane.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "shardplane.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{ include "shardplane.commonLabels" . }}
{{- end -}}

{{/* Labels of every object besides name and instance. */}}
{{- define "shardplane.commonLabels" -}}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of a component: dict "root" $ "component" "shard" "instance" "root" */}}
{{- define "shardplane.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- if .instance }}
shardplane.io/instance: {{ .instance }}
{{- end }}
{{- end -}}

{{- define "shardplane.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The shards with shardDefaults merged in, as a YAML list. */}}
{{- define "shardplane.shards" -}}
{{- $out := list -}}
{{- range $i, $s := .Values.shards -}}
{{- $merged := mergeOverwrite (deepCopy $.Values.shardDefaults) (deepCopy $s) -}}
{{- $out = append $out $merged -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* Service (and workload) name of a shard: dict "root" $ "shard" $s */}}
{{- define "shardplane.shardName" -}}
{{- printf "%s-shard-%s" (include "shardplane.fullname" .root) .shard.name -}}
{{- end -}}

{{- define "shardplane.etcdName" -}}
{{- printf "%s-etcd-%s" (include "shardplane.fullname" .root) .shard.name -}}
{{- end -}}

{{- define "shardplane.svcHost" -}}
{{- printf "%s.%s.svc" .name .root.Release.Namespace -}}
{{- end -}}

{{- define "shardplane.rootShardURL" -}}
{{- printf "https://%s:6443" (include "shardplane.svcHost" (dict "root" . "name" (printf "%s-shard-root" (include "shardplane.fullname" .)))) -}}
{{- end -}}

{{- define "shardplane.cacheName" -}}
{{- printf "%s-cache" (include "shardplane.fullname" .) -}}
{{- end -}}

{{- define "shardplane.frontProxyName" -}}
{{- printf "%s-front-proxy" (include "shardplane.fullname" .) -}}
{{- end -}}

{{/* Service (and Deployment) name of a shard's virtual-workspaces server: dict "root" $ "shard" $s */}}
{{- define "shardplane.virtualWorkspacesName" -}}
{{- printf "%s-virtual-workspaces-%s" (include "shardplane.fullname" .root) .shard.name -}}
{{- end -}}

{{/* Where a shard's views are served: its virtual-workspaces server, or
the shard itself when it serves them in-process. dict "root" $ "shard" $s */}}
{{- define "shardplane.virtualWorkspacesURL" -}}
{{- if .root.Values.virtualWorkspaces.enabled -}}
{{- printf "https://%s:6443" (include "shardplane.svcHost" (dict "root" .root "name" (include "shardplane.virtualWorkspacesName" .))) -}}
{{- else -}}
{{- printf "https://%s:6443" (include "shardplane.svcHost" (dict "root" .root "name" (include "shardplane.shardName" .))) -}}
{{- end -}}
{{- end -}}

{{/* The kubeconfigs of a shard's virtual-workspaces server: its shard as
system:masters, and every workspace through the front-proxy as
system:kcp:admin (which the front-proxy passes on) to authorize callers
with SubjectAccessReviews. dict "root" $ "shard" $s */}}
{{- define "shardplane.virtualWorkspacesKubeconfigs" -}}
shard.kubeconfig: |
  {{- include "shardplane.kubeconfig" (dict "cluster" (printf "shard-%s" .shard.name) "server" (printf "https://%s:6443" (include "shardplane.svcHost" (dict "root" .root "name" (include "shardplane.shardName" .)))) "user" "shardplane-virtual-workspaces" "certDir" "/etc/shardplane/virtual-workspaces-client") | nindent 2 }}
external.kubeconfig: |
  {{- include "shardplane.kubeconfig" (dict "cluster" "front-proxy" "server" (printf "https://%s:%d" (include "shardplane.svcHost" (dict "root" .root "name" (include "shardplane.frontProxyName" .root))) (int .root.Values.frontProxy.service.port)) "user" "shardplane-virtual-workspaces-external" "certDir" "/etc/shardplane/virtual-workspaces-external-client") | nindent 2 }}
{{- end -}}

{{- define "shardplane.externalURL" -}}
{{- if eq (int .Values.externalPort) 443 -}}
{{- printf "https://%s" .Values.externalHostname -}}
{{- else -}}
{{- printf "https://%s:%d" .Values.externalHostname (int .Values.externalPort) -}}
{{- end -}}
{{- end -}}

{{/* DNS names of a Service: dict "root" $ "name" <service> */}}
{{- define "shardplane.serviceDNSNames" -}}
- {{ .name }}
- {{ printf "%s.%s" .name .root.Release.Namespace }}
- {{ printf "%s.%s.svc" .name .root.Release.Namespace }}
- {{ printf "%s.%s.svc.%s" .name .root.Release.Namespace .root.Values.clusterDomain }}
- localhost
{{- end -}}

{{/* The volume with only the certificate of a CA Secret: dict "name" <volume> "secret" <secret> */}}
{{- define "shardplane.caVolume" -}}
- name: {{ .name }}
  secret:
    secretName: {{ .secret }}
    items:
      - key: tls.crt
        path: ca.crt
{{- end -}}

{{- define "shardplane.secretVolume" -}}
- name: {{ .name }}
  secret:
    secretName: {{ .secret }}
{{- end -}}

{{/* Pod settings shared by every workload: dict "root" $ "c" <component values> */}}
{{- define "shardplane.podSpecCommon" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with .c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Probes on /livez and /readyz of the https port named "https". */}}
{{- define "shardplane.probes" -}}
startupProbe:
  httpGet: {path: /livez, port: https, scheme: HTTPS}
  periodSeconds: 5
  failureThreshold: 60
livenessProbe:
  httpGet: {path: /livez, port: https, scheme: HTTPS}
  periodSeconds: 10
  failureThreshold: 6
readinessProbe:
  httpGet: {path: /readyz, port: https, scheme: HTTPS}
  periodSeconds: 5
  failureThreshold: 3
{{- end -}}

{{/* etcd flags of a shard or the cache server: dict "root" $ "shard" $s (or "cache" true) */}}
{{- define "shardplane.etcdArgs" -}}
{{- $etcd := .etcd -}}
{{- if eq $etcd.mode "statefulset" }}
{{- $name := include "shardplane.etcdName" . }}
{{- $servers := list }}
{{- range $i := until (int $etcd.replicas) }}
{{- $servers = append $servers (printf "https://%s-%d.%s-peer.%s.svc:2379" $name $i $name $.root.Release.Namespace) }}
{{- end }}
- --etcd-servers={{ join "," $servers }}
- --etcd-cafile=/etc/shardplane/etcd-client/ca.crt
- --etcd-certfile=/etc/shardplane/etcd-client/tls.crt
- --etcd-keyfile=/etc/shardplane/etcd-client/tls.key
{{- else if eq $etcd.mode "external" }}
- {{ printf "--etcd-servers=%s" (join "," $etcd.external.endpoints) | quote }}
- {{ printf "--etcd-prefix=%s" $etcd.external.prefix | quote }}
{{- if $etcd.external.tlsSecretName }}
- --etcd-cafile=/etc/shardplane/etcd-client/ca.crt
- --etcd-certfile=/etc/shardplane/etcd-client/tls.crt
- --etcd-keyfile=/etc/shardplane/etcd-client/tls.key
{{- end }}
{{- else }}
- --embedded-etcd-client-port={{ .embeddedPorts.client }}
- --embedded-etcd-peer-port={{ .embeddedPorts.peer }}
{{- end }}
{{- end -}}

{{/* The etcd client certificate volume, if the mode needs one. */}}
{{- define "shardplane.etcdClientVolume" -}}
{{- $etcd := .etcd -}}
{{- if eq $etcd.mode "statefulset" }}
- name: etcd-client
  secret:
    secretName: {{ include "shardplane.fullname" .root }}-etcd-client-tls
{{- else if and (eq $etcd.mode "external") $etcd.external.tlsSecretName }}
- name: etcd-client
  secret:
    secretName: {{ $etcd.external.tlsSecretName }}
{{- end }}
{{- end -}}

{{- define "shardplane.etcdClientMount" -}}
{{- $etcd := .etcd -}}
{{- if or (eq $etcd.mode "statefulset") (and (eq $etcd.mode "external") $etcd.external.tlsSecretName) }}
- name: etcd-client
  mountPath: /etc/shardplane/etcd-client
  readOnly: true
{{- end }}
{{- end -}}

{{/* A kubeconfig that authenticates with a mounted client certificate. */}}
{{- define "shardplane.kubeconfig" -}}
apiVersion: v1
kind: Config
clusters:
  - name: {{ .cluster }}
    cluster:
      server: {{ .server }}
      certificate-authority: /etc/shardplane/ca/server/ca.crt
users:
  - name: {{ .user }}
    user:
      client-certificate: {{ .certDir }}/tls.crt
      client-key: {{ .certDir }}/tls.key
contexts:
  - name: default
    context:
      cluster: {{ .cluster }}
      user: {{ .user }}
current-context: default
{{- end -}}

{{/* Fails rendering with a message when the values cannot work together. */}}
{{- define "shardplane.validate" -}}
{{- $shards := include "shardplane.shards" . | fromYamlArray -}}
{{- if or (eq (len $shards) 0) (ne (index $shards 0).name "root") -}}
{{- fail "shards: the first shard must be named root" -}}
{{- end -}}
{{- $seen := dict -}}
{{- range $shards -}}
{{- if hasKey $seen .name -}}
{{- fail (printf "shards: shard %q is listed twice" .name) -}}
{{- end -}}
{{- $_ := set $seen .name true -}}
{{- if and (eq .etcd.mode "embedded") (gt (int .replicas) 1) -}}
{{- fail (printf "shards[%s]: embedded etcd runs inside the shard process, so replicas must be 1; use etcd.mode statefulset or external for more" .name) -}}
{{- end -}}
{{- if and (eq .etcd.mode "external") (eq (len .etcd.external.endpoints) 0) -}}
{{- fail (printf "shards[%s]: etcd.mode external needs etcd.external.endpoints" .name) -}}
{{- end -}}
{{- end -}}
{{- if and (gt (len $shards) 1) (not .Values.cacheServer.enabled) -}}
{{- fail "shards other than root read and write shared objects through the cache server: set cacheServer.enabled" -}}
{{- end -}}
{{- if and .Values.cacheServer.enabled (eq .Values.cacheServer.etcd.mode "external") (eq (len .Values.cacheServer.etcd.external.endpoints) 0) -}}
{{- fail "cacheServer.etcd.mode external needs cacheServer.etcd.external.endpoints" -}}
{{- end -}}
{{- if .Values.virtualWorkspaces.enabled -}}
{{- if not .Values.frontProxy.enabled -}}
{{- fail "virtualWorkspaces.enabled needs frontProxy.enabled: clients reach the views at <front-proxy>/services/ and /shards/<shard>/, and the servers authorize callers through the front-proxy; without it, set virtualWorkspaces.enabled=false (the shards serve the views in-process)" -}}
{{- end -}}
{{- range $shards -}}
{{- $name := include "shardplane.virtualWorkspacesName" (dict "root" $ "shard" .) -}}
{{- if gt (len $name) 63 -}}
{{- fail (printf "shards[%s]: the Service name %q of its virtual-workspaces server is longer than 63 characters; use a shorter release name or shard name" .name $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.auth.oidc.enabled (or (not .Values.auth.oidc.issuerURL) (not .Values.auth.oidc.clientID)) -}}
{{- fail "auth.oidc.enabled needs auth.oidc.issuerURL and auth.oidc.clientID" -}}
{{- end -}}
{{- end -}}
