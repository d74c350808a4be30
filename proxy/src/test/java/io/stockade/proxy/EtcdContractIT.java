package io.stockade.proxy;

import java.util.Map;
import java.util.UUID;

import io.stockade.testing.EtcdServer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The whole contract through the HTTP backend (serialized class) with the fence state in a real etcd and the token
 * cache in front of it (the default). Each test gets its own key prefix.
 */
@RequiresTools(Tools.Tool.ETCD)
class EtcdContractIT extends HttpContractIT {
    static EtcdServer etcd;
    final String prefix = "/contract/" + UUID.randomUUID() + "/";

    @BeforeAll
    static void startEtcd() {
        etcd = EtcdServer.single();
    }

    @AfterAll
    static void stopEtcd() {
        if (etcd != null) {
            etcd.close();
        }
    }

    @Override
    String policyYaml() {
        return super.policyYaml().replace("""
                store:
                  type: memory
                  journal: ${JOURNAL}
                """, """
                store:
                  type: etcd
                  endpoints: ${ETCD}
                  prefix: ${PREFIX}
                  timeout: 2s
                """);
    }

    @Override
    Map<String, String> startStorage() {
        Map<String, String> vars = new java.util.HashMap<>(super.startStorage());
        vars.put("ETCD", etcd.endpoints());
        vars.put("PREFIX", prefix);
        return vars;
    }
}
