# The auditor's image: the plugin binary, static, on distroless/static as a non-root user.
#
#   docker build -t ghcr.io/<you>/kubectl-workloaddoctor:<version> --build-arg VERSION=<version> .
#   docker push ghcr.io/<you>/kubectl-workloaddoctor:<version>
#
# The binary is built exactly as `make build` builds bin/kubectl-workloaddoctor, with cgo off so
# that it needs no libc (the e2e suite's TestDockerfileBinary builds it the same way).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=v0.0.0-dev
ENV CGO_ENABLED=0
RUN make build VERSION=${VERSION}

FROM gcr.io/distroless/static:nonroot
COPY --from=build /src/bin/kubectl-workloaddoctor /kubectl-workloaddoctor
USER 65532:65532
ENTRYPOINT ["/kubectl-workloaddoctor"]
CMD ["audit", "--all-namespaces"]
