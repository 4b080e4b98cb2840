# One image with every controller binary (each Deployment picks its command).
#   make images            (docker or podman: IMAGE_TOOL=podman make images)
#
# Build stage: the workspace's pinned toolchain builds the `dist` binaries (release with
# whole-program optimisation, see Cargo.toml; statically linked, see hack/build-dist);
# dependency downloads and the target directory are cached between builds.
FROM docker.io/library/rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    dist=$(hack/build-dist --locked --bins) \
 && mkdir -p /out \
 && for bin in deppy-resolver rukpak-core plain-provisioner registry-provisioner \
               resolution-activator platform-operators; do \
      cp "$dist/$bin" /out/; \
    done

# Runtime: a slim Debian with CA certificates and the ssh client (git sources over ssh).
FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates openssh-client \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/local/bin/
# The OpenShift payload (oc adm release new collects /manifests of images labelled
# io.openshift.release.operator=true).
COPY deploy/openshift/ /manifests/
# glibc raises its mmap threshold after the first large buffer is freed, and later large
# buffers (compressor state, chunks) then come from the heap, where they fragment it: 1,000
# installs left rukpak-core at 87 MiB RSS for a 15 MiB live heap. A fixed threshold (glibc's
# starting value) keeps large buffers in their own mappings, returned when freed.
ENV GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072
# Non-root; numeric so runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/platform-operators"]
LABEL org.opencontainers.image.title="olmv1-rs" \
      org.opencontainers.image.description="OLM v1 building blocks in Rust: Deppy, RukPak, Platform Operators" \
      io.openshift.release.operator="true"
