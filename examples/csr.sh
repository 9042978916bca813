#!/bin/sh
# Usage: sh examples/csr.sh NAME [GROUP]
# Makes a private key NAME.key in the current directory and prints a CertificateSigningRequest
# for the user NAME (in GROUP, if given) for the kube-apiserver-client signer, to pipe into
# `kubectl apply -f -`. Once approved, the controller manager signs it:
#   kubectl get csr NAME -o jsonpath='{.status.certificate}' | base64 -d > NAME.crt
set -eu
name=${1:?usage: sh examples/csr.sh NAME [GROUP]}
subject="/CN=$name"
[ -n "${2:-}" ] && subject="$subject/O=$2"
openssl ecparam -name prime256v1 -genkey -noout -out "$name.key" 2>/dev/null
request=$(openssl req -new -key "$name.key" -subj "$subject" | base64 | tr -d '\n')
cat <<YAML
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: $name
spec:
  request: $request
  signerName: kubernetes.io/kube-apiserver-client
  usages: [client auth]
YAML
