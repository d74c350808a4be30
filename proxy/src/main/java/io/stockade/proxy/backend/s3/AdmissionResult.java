package io.stockade.proxy.backend.s3;

import io.stockade.proxy.problem.Problem;

import org.jspecify.annotations.Nullable;

/**
 * What {@link S3Admission} (or {@link FormAdmission}) made of a request: the request read and authenticated, or why
 * it was refused.
 *
 * @param request the admitted request, or null when refused
 * @param refusal why it was refused, or null when admitted
 */
record AdmissionResult(@Nullable AdmittedRequest request, @Nullable Problem refusal) {
    static AdmissionResult refused(int status, String code, String message, @Nullable String resource) {
        return new AdmissionResult(null, S3Problems.of(status, code, message, resource));
    }
}
