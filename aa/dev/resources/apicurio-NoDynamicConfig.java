package aa.registry;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;

/** The list of settings an operator may change at run time: none (see apicurio-pom.xml). */
public class NoDynamicConfig {
    @Produces
    @ApplicationScoped
    DynamicConfigPropertyList none() {
        return new DynamicConfigPropertyList(List.of());
    }
}
