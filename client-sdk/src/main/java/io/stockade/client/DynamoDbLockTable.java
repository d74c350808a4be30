package io.stockade.client;

import java.util.List;

import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeDefinition;
import software.amazon.awssdk.services.dynamodb.model.BillingMode;
import software.amazon.awssdk.services.dynamodb.model.KeySchemaElement;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.ResourceInUseException;
import software.amazon.awssdk.services.dynamodb.model.ScalarAttributeType;
import software.amazon.awssdk.services.dynamodb.model.TableDescription;

/**
 * The table of the DynamoDB lock items ({@link Leases.Builder#dynamodb}): partition key {@code key}, a string, no
 * sort key. Usually made once by infrastructure code (Terraform, CloudFormation, or
 * {@code aws dynamodb create-table --table-name T --attribute-definitions AttributeName=key,AttributeType=S
 * --key-schema AttributeName=key,KeyType=HASH --billing-mode PAY_PER_REQUEST}); this is the same for tests and
 * scripts.
 */
public final class DynamoDbLockTable {
    private DynamoDbLockTable() {
    }

    /**
     * Creates the table on demand (pay per request) and waits until it is ACTIVE; a table that exists already is
     * checked to have the lock table's key.
     *
     * @param client the DynamoDB client
     * @param table  the table name
     * @throws IllegalStateException if a table of that name exists with another key
     */
    public static void create(DynamoDbClient client, String table) {
        try {
            client.createTable(b -> b.tableName(table)
                    .attributeDefinitions(AttributeDefinition.builder().attributeName(DynamoDbLeaseService.KEY)
                            .attributeType(ScalarAttributeType.S).build())
                    .keySchema(KeySchemaElement.builder().attributeName(DynamoDbLeaseService.KEY)
                            .keyType(KeyType.HASH).build())
                    .billingMode(BillingMode.PAY_PER_REQUEST));
        } catch (ResourceInUseException exists) {
            TableDescription d = client.describeTable(b -> b.tableName(table)).table();
            if (!d.keySchema().equals(List.of(KeySchemaElement.builder().attributeName(DynamoDbLeaseService.KEY)
                    .keyType(KeyType.HASH).build()))) {
                throw new IllegalStateException("the DynamoDB table '" + table + "' exists with the key "
                        + d.keySchema() + ", not a lock table (partition key '" + DynamoDbLeaseService.KEY
                        + "', no sort key)");
            }
        }
        client.waiter().waitUntilTableExists(b -> b.tableName(table));
    }
}
