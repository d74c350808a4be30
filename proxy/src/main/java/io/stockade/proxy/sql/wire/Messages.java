package io.stockade.proxy.sql.wire;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/** The messages the listener builds or reads the fields of (PostgreSQL protocol 3.0). */
public final class Messages {
    /** Client messages. */
    public static final byte QUERY = 'Q';
    public static final byte PARSE = 'P';
    public static final byte BIND = 'B';
    public static final byte CLOSE = 'C';
    public static final byte SYNC = 'S';
    public static final byte FLUSH = 'H';
    public static final byte DESCRIBE = 'D';
    public static final byte EXECUTE = 'E';
    public static final byte TERMINATE = 'X';
    public static final byte FUNCTION_CALL = 'F';
    public static final byte COPY_DATA = 'd';
    public static final byte COPY_DONE = 'c';
    public static final byte COPY_FAIL = 'f';
    /** PasswordMessage, SASLInitialResponse and SASLResponse share it. */
    public static final byte PASSWORD = 'p';
    /** Server messages. */
    public static final byte AUTHENTICATION = 'R';
    public static final byte ERROR = 'E';
    public static final byte NOTICE = 'N';
    public static final byte READY = 'Z';
    public static final byte COMMAND_COMPLETE = 'C';
    public static final byte BACKEND_KEY = 'K';
    public static final byte DATA_ROW = 'D';

    /** Startup packet codes. */
    public static final int PROTOCOL_3 = 196_608;
    public static final int SSL_REQUEST = 80_877_103;
    public static final int GSSENC_REQUEST = 80_877_104;
    public static final int CANCEL_REQUEST = 80_877_102;

    /** AuthenticationSASL, the code in an 'R' message. */
    public static final int AUTH_SASL = 10;
    public static final int AUTH_OK = 0;
    public static final int AUTH_SASL_CONTINUE = 11;
    public static final int AUTH_SASL_FINAL = 12;

    private Messages() {
    }

    /**
     * An ErrorResponse (severity ERROR, or FATAL when the session ends) with Stockade's SQLSTATE; {@code hint} null:
     * none.
     */
    public static byte[] error(boolean fatal, String code, String message, @Nullable String hint) {
        Body.Builder b = new Body.Builder()
                .int8('S').string(fatal ? "FATAL" : "ERROR")
                .int8('V').string(fatal ? "FATAL" : "ERROR")
                .int8('C').string(code)
                .int8('M').string(message);
        if (hint != null) {
            b.int8('H').string(hint);
        }
        return b.int8(0).build();
    }

    /** A Query message's body. */
    public static byte[] query(String sql) {
        return new Body.Builder().string(sql).build();
    }

    /** The fields of an ErrorResponse or NoticeResponse body by their code ('C' SQLSTATE, 'M', 'D', ...). */
    public static Map<Character, String> fields(byte[] body) throws MessageReader.ProtocolException {
        Map<Character, String> fields = new LinkedHashMap<>();
        Body in = new Body(body);
        while (!in.atEnd()) {
            byte code = in.int8();
            if (code == 0) {
                break;
            }
            fields.put((char) code, in.string());
        }
        return fields;
    }

    /**
     * A startup packet's parameters, in order (user, database, options, and any setting a client sends).
     *
     * @param body the packet after its length and protocol code
     */
    public static Map<String, String> startupParameters(byte[] body) throws MessageReader.ProtocolException {
        Map<String, String> params = new LinkedHashMap<>();
        Body in = new Body(body);
        while (!in.atEnd()) {
            String name = in.string();
            if (name.isEmpty()) {
                break;
            }
            if (params.put(name, in.string()) != null) {
                throw new MessageReader.ProtocolException("startup parameter '" + name + "' given twice");
            }
        }
        return params;
    }

    /** A startup packet, length and protocol code included. */
    public static byte[] startup(Map<String, String> params) {
        Body.Builder b = new Body.Builder().int32(0).int32(PROTOCOL_3);
        params.forEach((k, v) -> b.string(k).string(v));
        byte[] out = b.int8(0).build();
        out[0] = (byte) (out.length >>> 24);
        out[1] = (byte) (out.length >>> 16);
        out[2] = (byte) (out.length >>> 8);
        out[3] = (byte) out.length;
        return out;
    }

    /** The mechanisms of an AuthenticationSASL body (after its code). */
    public static List<String> saslMechanisms(Body in) throws MessageReader.ProtocolException {
        List<String> out = new ArrayList<>();
        while (!in.atEnd()) {
            String m = in.string();
            if (m.isEmpty()) {
                break;
            }
            out.add(m);
        }
        return out;
    }

    /** An AuthenticationSASL body offering {@code mechanisms}. */
    public static byte[] saslOffer(List<String> mechanisms) {
        Body.Builder b = new Body.Builder().int32(AUTH_SASL);
        mechanisms.forEach(b::string);
        return b.int8(0).build();
    }
}
