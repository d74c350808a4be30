package io.stockade.proxy.backend.s3;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.stockade.proxy.S3Fixture;
import io.stockade.testing.AwsCliV1;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.ToolRun;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The AWS CLI's hook configuration in docs/s3.md (*The AWS CLI and boto3*), exactly as the doc writes it: the fenced
 * blocks are read from the markdown (the v1 block with its {@code export PYTHONPATH=} line, the v2 block with
 * {@code cli_legacy_plugin_path}), {@code /opt/stockade} stands for this clone as the doc says, and each major
 * version runs {@code aws s3 cp} through the proxy to an in-process s3proxy: {@code FENCING_TOKEN=7} lands with its
 * token, then {@code FENCING_TOKEN=6} is refused and s3proxy still holds the first body and token 7. The v1 block
 * used to be v2's, on which v1 stops with {@code ModuleNotFoundError}.
 */
@RequiresTools({Tools.Tool.AWS_CLI, Tools.Tool.AWS_CLI_V1})
class S3CliDocIT {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path DOC = ROOT.resolve("docs").resolve("s3.md");
    private static final String BUCKET = "doc";
    @TempDir
    static Path journal;
    @TempDir
    static Path work;
    private static S3Fixture fixture;
    private static S3Client direct;

    @BeforeAll
    static void start() throws Exception {
        fixture = S3Fixture.start(journal);
        direct = fixture.direct();
        direct.createBucket(b -> b.bucket(BUCKET));
    }

    @AfterAll
    static void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    /** The fenced blocks of the doc's section on the AWS CLI, each as {language, text} (indentation removed). */
    static List<String[]> blocks() throws Exception {
        String doc = Files.readString(DOC);
        int from = doc.indexOf("\n## The AWS CLI and boto3\n");
        assertTrue(from >= 0, "docs/s3.md has its section on the AWS CLI");
        int to = doc.indexOf("\n## ", from + 1);
        List<String[]> blocks = new ArrayList<>();
        String language = null;
        String indent = "";
        StringBuilder text = null;
        for (String line : doc.substring(from, to).split("\n", -1)) {
            String stripped = line.strip();
            if (text == null && stripped.startsWith("```")) {
                language = stripped.substring(3);
                indent = line.substring(0, line.indexOf("```"));
                text = new StringBuilder();
            } else if (text != null && stripped.equals("```")) {
                blocks.add(new String[]{language, text.toString()});
                text = null;
            } else if (text != null) {
                text.append(line.startsWith(indent) ? line.substring(indent.length()) : line).append('\n');
            }
        }
        return blocks;
    }

    /** The {@code [plugins]} block for v1 (without cli_legacy_plugin_path) or v2 (with it), as the doc has it. */
    private static String pluginBlock(boolean v2) throws Exception {
        List<String> found = blocks().stream().filter(b -> b[0].equals("ini") && b[1].startsWith("[plugins]\n"))
                .map(b -> b[1]).filter(t -> t.contains("cli_legacy_plugin_path") == v2).toList();
        assertEquals(1, found.size(), "one [plugins] block for " + (v2 ? "v2" : "v1") + ": " + found);
        return v2 ? here(found.get(0)) : found.get(0);
    }

    /** The value of the doc's {@code export PYTHONPATH=} line, for v1. */
    private static String pythonPath() throws Exception {
        List<String> found = blocks().stream().filter(b -> b[0].equals("sh"))
                .flatMap(b -> b[1].lines()).filter(l -> l.startsWith("export PYTHONPATH=")).toList();
        assertEquals(1, found.size(), found.toString());
        return here(found.get(0).substring("export PYTHONPATH=".length()).strip());
    }

    /** The doc's {@code /opt/stockade} ("where your clone is") as this clone. */
    private static String here(String text) {
        assertTrue(text.contains("/opt/stockade/client-sdk/python"), text);
        return text.replace("/opt/stockade", ROOT.toString());
    }

    private static ToolRun aws(String aws, Path config, String pythonPath, long token, String... args)
            throws Exception {
        List<String> command = new ArrayList<>(List.of(aws, "--endpoint-url", fixture.proxyUri().toString()));
        command.addAll(List.of(args));
        Map<String, String> set = new HashMap<>();
        set.put("AWS_CONFIG_FILE", config.toString());
        set.put("AWS_SHARED_CREDENTIALS_FILE", work.resolve("no-credentials").toString());
        set.put("AWS_ACCESS_KEY_ID", S3Fixture.APP_KEY);
        set.put("AWS_SECRET_ACCESS_KEY", S3Fixture.APP_SECRET);
        set.put("AWS_EC2_METADATA_DISABLED", "true");
        set.put("AWS_PAGER", "");
        set.put("FENCING_TOKEN", Long.toString(token));
        if (pythonPath != null) {
            set.put("PYTHONPATH", pythonPath);
        }
        return ToolRun.run(command, work, work,
                k -> k.startsWith("AWS_") || k.equals("FENCING_TOKEN") || k.equals("PYTHONPATH"), set,
                Duration.ofSeconds(120));
    }

    /** The doc's block in a config file of its own, after the profile the test needs (region, path style). */
    private static Path config(String name, String pluginBlock) throws Exception {
        return Files.writeString(work.resolve(name), "[default]\nregion = us-east-1\ns3 =\n"
                + "    addressing_style = path\n\n" + pluginBlock);
    }

    private void fencedWriteLandsAndAStaleOneIsRefused(String aws, Path config, String pythonPath, String key)
            throws Exception {
        String file = key.replace('/', '-');
        Path v7 = Files.writeString(work.resolve(file + "-7.csv"), "written under token 7\n");
        Path v6 = Files.writeString(work.resolve(file + "-6.csv"), "written under token 6\n");
        String target = "s3://" + BUCKET + "/" + key;
        ToolRun ok = aws(aws, config, pythonPath, 7, "s3", "cp", v7.toString(), target);
        assertEquals(0, ok.code(), ok.toString());
        assertFalse(ok.err().contains("Traceback"), ok.toString());
        assertEquals("7", direct.headObject(b -> b.bucket(BUCKET).key(key)).metadata().get("fencing-token"));
        assertEquals("written under token 7\n",
                direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String());

        ToolRun stale = aws(aws, config, pythonPath, 6, "s3", "cp", v6.toString(), target);
        assertNotEquals(0, stale.code(), stale.toString());
        assertTrue(stale.err().contains("PreconditionFailed") && stale.err().contains("token 6 is below the highest"
                + " token 7"), stale.toString());
        // nothing of the stale write reached s3proxy; the object's fence is still 7
        assertEquals("7", direct.headObject(b -> b.bucket(BUCKET).key(key)).metadata().get("fencing-token"));
        assertEquals("written under token 7\n",
                direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String());
    }

    @Test
    void theV1BlockWithItsPythonPathFencesTheAwsCliV1() throws Exception {
        String aws = AwsCliV1.binary().orElseThrow().toString();
        fencedWriteLandsAndAStaleOneIsRefused(aws, config("config-v1", pluginBlock(false)), pythonPath(),
                "v1/report.csv");
    }

    @Test
    void theV2BlockFencesTheAwsCliV2() throws Exception {
        fencedWriteLandsAndAStaleOneIsRefused("/usr/bin/aws", config("config-v2", pluginBlock(true)), null,
                "v2/report.csv");
    }
}
