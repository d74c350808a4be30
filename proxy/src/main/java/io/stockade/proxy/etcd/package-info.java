/**
 * What the etcd fence store ({@code store.etcd}) and the etcd token verifier ({@code verify.etcd}) share: one
 * place that builds a jetcd {@code Client} from a policy's connection options — endpoints, the deadline, client
 * TLS ({@code tls: {ca, cert, key}}, read by {@link io.stockade.proxy.tls.ClientTlsFiles}) and etcd
 * authentication ({@code username}, {@code password} or {@code password-file}) — so both speak to etcd the same
 * way ({@code EtcdClients.open}). Depends on jetcd-core and {@code http} only.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.etcd;

import org.jspecify.annotations.NullMarked;
