package io.stockade.proxy.backend.s3;

import io.stockade.proxy.problem.Problem;

/**
 * What {@link S3Admission} (or {@link FormAdmission}) made of a request: the request read and authenticated, or why
 * it was refused.
 *
 * @param request the admitted request, or null when refused
 * @param refusal why it was refused, or null when admitted
 */
record AdmissionResult(AdmittedRequest request, Problem refusal) {
    static AdmissionResult refused(int status, String code, String message, String resource) {
        return new AdmissionResult(null, S3Problems.of(status, code, message, resource));
    }
}
